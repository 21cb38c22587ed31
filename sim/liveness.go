package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// This file is the liveness phase (DESIGN: a safety phase, then a liveness
// phase in which faults stop and the system must converge), the same for
// a run (run.go) and for a property case (scenarios).

// Drain is the whole liveness phase: Liveness, then d of virtual time
// sampled every `every`, then the executor's keep-alive and a second more
// (idle workers above core retire), and a last sample, marked idle. It
// returns Liveness's error, having drained all the same.
func (c *Cluster) Drain(d, every time.Duration) error {
	err := c.Liveness()
	end := c.Now() + d
	if err == nil {
		c.afterRecovery(end)
	}
	c.runSampled(end, every)
	c.Sched.RunFor(c.cfg.Executor.KeepAlive + time.Second)
	c.Sample(true, true)
	return err
}

// runSampled drives the bubble until virtual time end, sampling at every
// quiescent point `every` apart, goroutines included.
func (c *Cluster) runSampled(end, every time.Duration) {
	for c.Now() < end {
		c.Sched.RunUntil(min(end, c.Now()+every))
		c.Sample(false, !c.FinalCountsOnly)
	}
}

// afterRecovery plans the liveness phase's traffic: once the cluster has
// healed (now) and settled (Settle of the nodes' config), bursts of sends
// from the workload's users to rooms they are members of, each burst
// several sends of one room through one node at one virtual instant (so
// they fan out to the same remote nodes on the same links). From the
// settle time on, CheckTimely judges sends with no fault excuse
// (History.StrictFrom). The draws come from the seed's own "recovery"
// sub-seed: nothing else moves. A drain too short to judge them after the
// settle time (shorter than twice it), or a run whose timely delivery is
// unchecked, sends nothing.
func (c *Cluster) afterRecovery(end time.Duration) {
	nc := system.DefaultConfig()
	if c.cfg.Node != nil {
		c.cfg.Node(&nc)
	}
	settle := Settle(nc)
	from := c.Now() + settle
	if end-from < settle || c.rec.liveBound() <= 0 || c.cfg.NoRecoveryTraffic {
		return
	}
	members := c.rec.members()
	var rooms []string
	for room := range members {
		if len(members[room]) > 0 {
			rooms = append(rooms, room)
		}
	}
	if len(rooms) == 0 {
		return
	}
	sort.Strings(rooms)
	c.rec.strictFrom(from)
	r := c.cfg.Seed.Derive("recovery").Rand()
	sent := map[string]int{}
	bursts := 1 + r.IntN(3)
	for b := range bursts {
		at := from + time.Duration(b)*recoveryBurstGap
		room := rooms[r.IntN(len(rooms))]
		node := r.IntN(len(c.nodes))
		for range 2 + r.IntN(4) {
			u := members[room][r.IntN(len(members[room]))]
			sent[u]++
			c.Do(Action{At: at, User: u, Kind: ActSend, Room: room, Node: node, MsgID: fmt.Sprintf("%s-rec%d", u, sent[u])})
		}
	}
	c.Trace.Event(c.Now(), "chaos", "liveness: %d bursts of sends from t=%v (heal + settle %v), judged with no fault excuse", bursts, from, settle)
	if c.rec.rewound() {
		// After a Redis rewind, one more burst through each node: a node
		// restarted across it runs with an epoch its peers may have seen
		// exceeded, and its links must carry its messages live again. From
		// a sub-seed of its own: a run with no rewind draws nothing more.
		rr := c.cfg.Seed.Derive("recovery-rewind").Rand()
		for i := range c.nodes {
			at := from + time.Duration(bursts+i)*recoveryBurstGap
			room := rooms[rr.IntN(len(rooms))]
			for k := range 3 + rr.IntN(3) {
				u := members[room][rr.IntN(len(members[room]))]
				c.Do(Action{At: at, User: u, Kind: ActSend, Room: room, Node: i, MsgID: fmt.Sprintf("rw%d-%d", i+1, k+1)})
			}
		}
		c.Trace.Event(c.Now(), "chaos", "liveness: after a Redis rewind, a burst through each of the %d nodes", len(c.nodes))
	}
}

// recoveryBurstGap separates the liveness phase's bursts.
const recoveryBurstGap = 500 * time.Millisecond

// Liveness ends the fault phase: faults stop, partitions heal, paused and
// crashed nodes come back, and every user reconnects (with its cursors).
func (c *Cluster) Liveness() error {
	c.faults.on = false
	// A recv-break armed and not yet spent ends with the fault phase too.
	c.faults.mu.Lock()
	c.forcedCuts = 0
	c.faults.mu.Unlock()
	if c.stopChaos != nil {
		close(c.stopChaos)
		c.stopChaos = nil
	}
	if err := c.finishRewind(); err != nil {
		return fmt.Errorf("redis-rewind: %w", err)
	}
	c.Net.Heal()
	c.rec.endFault(model.FaultPartition, "", c.Now())
	c.Sched.UnpauseAll()
	c.endStalls()
	c.Trace.Event(c.Now(), "chaos", "liveness: faults off, heal, restart, reconnect")
	for i, sn := range c.nodes {
		if !sn.up {
			if err := c.drive(func() error { return c.Restart(i) }); err != nil {
				return fmt.Errorf("restart n%d: %w", i+1, err)
			}
		}
		// A restart the injector began finishes on its own.
		for sn.starting {
			c.Sched.RunFor(10 * time.Millisecond)
		}
	}
	for _, cl := range c.userList() {
		node := int(dst.HashString(cl.user) % uint64(len(c.nodes)))
		c.Do(Action{At: c.Now(), User: cl.user, Kind: ActConnect, Node: node})
	}
	return nil
}

package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
)

// StartChaos injects the planned faults from their own goroutine (a
// restart passes gates, and the driver must keep scheduling meanwhile).
// The returned channel closes when all are injected.
func (c *Cluster) StartChaos(plan []Fault) <-chan struct{} {
	done := make(chan struct{})
	stop := c.chaosStop()
	go func() {
		defer close(done)
		for i, f := range plan {
			if d := f.At - c.Now(); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-stop:
					t.Stop()
					return
				}
			}
			if !c.faults.on {
				return
			}
			c.Sched.Gate(dst.GateSpec{Node: "chaos", Kind: KindChaos, ID: fmt.Sprintf("f%d %s", i+1, f.Kind)})
			c.Inject(f)
		}
	}()
	return done
}

func (c *Cluster) chaosStop() <-chan struct{} {
	if c.stopChaos == nil {
		c.stopChaos = make(chan struct{})
	}
	return c.stopChaos
}

// Inject applies one fault now.
func (c *Cluster) Inject(f Fault) {
	c.Stats.FaultsInjected++
	c.Trace.Event(c.Now(), "chaos", "fault %s", f)
	c.recordTimed(f)
	switch f.Kind {
	case "crash":
		c.Crash(f.Node)
	case "restart":
		if err := c.Restart(f.Node); err != nil {
			c.Trace.Event(c.Now(), "chaos", "restart n%d failed: %v", f.Node+1, err)
		}
	case "upgrade":
		if err := c.Upgrade(f.Node, f.Protocol); err != nil {
			c.Trace.Event(c.Now(), "chaos", "upgrade n%d failed: %v", f.Node+1, err)
		}
	case "partition":
		for _, l := range c.links(f) {
			c.Net.Cut(l[0], l[1])
		}
	case "heal":
		for _, l := range c.links(f) {
			c.Net.Uncut(l[0], l[1])
		}
	case "pause":
		c.Sched.Pause(c.nodes[f.Node].id, c.Now()+f.For)
	case "redis-outage":
		c.faults.outages = append(c.faults.outages, [2]time.Duration{c.Now(), c.Now() + f.For})
	case "redis-spike":
		c.faults.addSpike(c.Now(), c.Now()+f.For, redisSpikeLatency)
	case "route-flush":
		c.FlushRoutes()
	case "vanish":
		c.Do(Action{At: c.Now(), User: f.User, Kind: ActVanish})
	case "slow":
		c.Do(Action{At: c.Now(), User: f.User, Kind: ActSlow, For: f.For})
	case "forge":
		c.doNow(f.Forge.action(c.Now(), f.User))
	}
}

// recordTimed gives the oracle the fault: what it touches and for how
// long. A crash is recorded by Crash (and ends when the node is up again),
// a partition ends at its heal.
func (c *Cluster) recordTimed(f Fault) {
	now := c.Now()
	mf := model.Fault{From: now, To: now + f.For, Kind: f.Kind}
	switch f.Kind {
	case "crash", "restart", "upgrade", "forge": // forge: the forged call's own event records it
		return
	case "partition":
		mf.To, mf.Nodes = -1, c.linkNodes(f)
	case "heal":
		c.endPartition(c.linkNodes(f))
		return
	case "pause":
		mf.Nodes = []string{c.nodes[f.Node].id}
	case "redis-outage", "redis-spike", "route-flush":
		mf.Redis = true
	case "vanish", "slow":
		mf.User = f.User
	}
	c.recordFault(mf)
}

// linkNodes lists the nodes a partition fault cuts, sorted.
func (c *Cluster) linkNodes(f Fault) []string {
	var out []string
	for _, l := range c.links(f) {
		for _, n := range l {
			if !slicesContains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// endPartition ends the open partition over exactly nodes.
func (c *Cluster) endPartition(nodes []string) {
	c.histMu.Lock()
	defer c.histMu.Unlock()
	for i := range c.hist.Faults {
		f := &c.hist.Faults[i]
		if f.Kind == "partition" && f.To < 0 && strings.Join(f.Nodes, ",") == strings.Join(nodes, ",") {
			f.To = c.Now()
			return
		}
	}
}

// links lists the one-way links a partition fault cuts.
func (c *Cluster) links(f Fault) [][2]string {
	a := c.nodes[f.Node].id
	if f.Peer < 0 {
		var out [][2]string
		for _, sn := range c.nodes {
			if sn.id != a {
				out = append(out, [2]string{a, sn.id}, [2]string{sn.id, a})
			}
		}
		return out
	}
	b := c.nodes[f.Peer].id
	if f.OneWay {
		return [][2]string{{a, b}}
	}
	return [][2]string{{a, b}, {b, a}}
}

// FlushRoutes deletes every routing entry (loss of routing keys).
func (c *Cluster) FlushRoutes() {
	keys := c.Redis.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "route:") {
			c.Redis.Del(k)
		}
	}
}

// Liveness ends the fault phase: faults stop, partitions heal, paused and
// crashed nodes come back, and every user reconnects (with its cursors).
func (c *Cluster) Liveness() error {
	c.faults.on = false
	if c.stopChaos != nil {
		close(c.stopChaos)
		c.stopChaos = nil
	}
	c.Net.Heal()
	c.endFault("partition", "")
	c.Sched.UnpauseAll()
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

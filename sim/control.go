package sim

import (
	"fmt"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// This file is the cluster's control panel for explicit stories (the
// scenario files of scenarios/testdata): faults applied by name at a
// chosen moment instead of drawn from a seed, and a look at one node. Each
// call is a thin wrapper over the fault injector (Inject), so the oracle
// records every fault exactly as it records the drawn ones. Call them from
// the driver, between scheduler runs.

// Apply injects f now, from a goroutine of its own that passes a chaos
// gate (a crash cuts a node at its gates and a restart passes gates, so
// the driver must keep scheduling meanwhile), and drives the cluster until
// the fault is in place.
func (c *Cluster) Apply(f Fault) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Sched.Gate(dst.GateSpec{Node: "chaos", Kind: KindChaos, ID: fmt.Sprintf("%v %s", c.Now(), f)})
		c.Inject(f)
	}()
	if !c.Sched.Await(done, time.Minute) {
		return fmt.Errorf("fault %s did not complete within a minute of virtual time", f)
	}
	return nil
}

// NodeIndex returns the index of the node with id ("n2" -> 1).
func (c *Cluster) NodeIndex(id string) (int, bool) {
	for i, sn := range c.nodes {
		if sn.id == id {
			return i, true
		}
	}
	return 0, false
}

// Up reports whether node i is up.
func (c *Cluster) Up(i int) bool { return c.nodes[i].up }

// Protocol is the relay protocol version node i runs (and restarts with).
func (c *Cluster) Protocol(i int) int { return c.nodes[i].protocol }

// Legacy is the legacy behaviours node i runs (and restarts with).
func (c *Cluster) Legacy(i int) system.Legacy { return c.nodes[i].legacy }

// SetLegacy makes node i's next incarnations run with the legacy
// behaviours l (system.Config.Legacy): the running one, if any, keeps its
// own until it is restarted (Restart after a crash, or Replace with its
// own protocol for a graceful restart), as an operator changes a node's
// flags and then restarts it.
func (c *Cluster) SetLegacy(i int, l system.Legacy) {
	sn := c.nodes[i]
	if sn.legacy == l {
		return
	}
	c.tell(sn.id, NodeLegacy{From: sn.legacy, To: l})
	sn.legacy = l
}

// Partition cuts the links between nodes a and b both ways until Heal.
func (c *Cluster) Partition(a, b int) error {
	return c.Apply(Fault{Kind: model.FaultPartition, Node: a, Peer: b})
}

// Isolate cuts node a from every other node until Heal.
func (c *Cluster) Isolate(a int) error {
	return c.Apply(Fault{Kind: model.FaultPartition, Node: a, Peer: -1})
}

// Heal restores every link and ends every partition the history holds
// open (the liveness phase's heal, without the rest of it).
func (c *Cluster) Heal() {
	c.inject(injection{node: "chaos", what: "heal all"})
	c.Net.Heal()
	c.rec.endFault(model.FaultPartition, "", c.Now())
}

// DropResponses loses, for d, the responses of every call from node from
// to node to: the requests arrive and their handlers run, the answers do
// not come back, so the caller times out and retries (duplicate relays).
// It is the one-way cut of the link to -> from, so calls that to makes to
// from are lost too for d. The link heals by itself after d.
func (c *Cluster) DropResponses(from, to int, d time.Duration) error {
	cut := Fault{Kind: model.FaultPartition, Node: to, Peer: from, OneWay: true, For: d}
	if err := c.Apply(cut); err != nil {
		return err
	}
	heal := cut
	heal.Kind, heal.At = model.FaultHeal, c.Now()+d
	c.StartChaos([]Fault{heal})
	return nil
}

// RedisOutage makes every Redis command fail for d from now.
func (c *Cluster) RedisOutage(d time.Duration) error {
	return c.Apply(Fault{Kind: model.FaultRedisOutage, For: d})
}

// Vanish makes user's client stop reading without closing its stream.
func (c *Cluster) Vanish(user string) error {
	return c.Apply(Fault{Kind: model.FaultVanish, User: user})
}

// NodeStats is one node seen from outside, at a quiescent point.
type NodeStats struct {
	ID    string
	Up    bool
	Epoch uint64
	// The executor: live workers, the largest pool so far, workers holding
	// a task, tasks queued, completed and run by their caller.
	Pool, Peak, Active, Queued int
	Completed, CallerRuns      int64
	// Sessions is what the node reports; Streams are its open client
	// streams counted from gRPC's stats; PeerConns its connections to
	// peers (the node's count); Goroutines those carrying its label.
	Sessions, Streams, PeerConns, Goroutines int
}

// NodeStats returns node i's figures (zero but the id when it is down). Like
// Sample, it only reads: nothing the relay does changes by it.
func (c *Cluster) NodeStats(i int) NodeStats {
	sn := c.nodes[i]
	s := NodeStats{ID: sn.id, Up: sn.up}
	if !sn.up {
		return s
	}
	m := sn.n.Metrics()
	s.Epoch = sn.epoch
	s.Pool, s.Peak, s.Active, s.Queued = m.Executor.Pool, m.Executor.Peak, m.Executor.Active, m.Executor.Queued
	s.Completed, s.CallerRuns = m.Executor.Completed, m.Executor.CallerRuns
	s.Sessions, s.Streams, s.PeerConns = m.Sessions, int(sn.hooks.streams.open.Load()), m.PeerConns
	s.Goroutines = countRun(c.runID).node[sn.tag]
	return s
}

// BreakConnections closes every connection node from has dialled to node
// to, as a network that resets them would: calls in flight on them fail,
// a relay stream breaks wherever it is in its batch, and gRPC dials anew
// (with the deterministic back-off). The oracle records it as an instant
// fault of the link.
func (c *Cluster) BreakConnections(from, to int) int {
	a, b := c.nodes[from], c.nodes[to]
	c.inject(injection{node: "chaos", what: fmt.Sprintf("%s %s->%s", model.FaultBreak, a.id, b.id), record: c.linkFault(model.FaultBreak, a.id, b.id)})
	return c.Net.Break(a.tag, b.id)
}

package sim

// A node's incarnations: the cluster's restarts, upgrades, crashes.

import (
	"context"
	"time"

	"github.com/relaysim/relaysim/model"
)

// Upgrade restarts node i with relay protocol version v, as a rolling
// upgrade does: the running incarnation stops gracefully (its client
// streams are closed and its clients reconnect elsewhere), then a new one
// starts with v. A node that is down comes back with v at its restart. Call
// it from a gated goroutine (the chaos injector) or through drive.
func (c *Cluster) Upgrade(i, v int) error { return c.Replace(i, v, nil) }

// Overlap makes a restart overlap incarnations (Replace): Lag holds the
// stopping incarnation after each Redis command of its stop.
type Overlap struct{ Lag time.Duration }

// Replace restarts node i gracefully with relay protocol version v (its
// own for a plain restart). With an overlap, as an orchestrator that starts
// the new process as soon as it has told the old one to stop, the new
// incarnation starts once the old one has begun to deregister (its
// refresh loop has ended and its sessions are closed), while it is still
// deregistering and draining its calls (held overlap.Lag after each Redis
// command of its stop); the oracle sees an overlap fault
// (model.FaultOverlap) from the stop until the new incarnation is up and
// the old one has stopped.
func (c *Cluster) Replace(i, v int, overlap *Overlap) error {
	sn := c.nodes[i]
	from := sn.protocol
	sn.protocol = v
	if !sn.up || sn.starting {
		c.tell(sn.id, NodeUpgrade{From: from, To: v, AtRestart: true})
		return nil
	}
	c.tell(sn.id, NodeUpgrade{From: from, To: v, Epoch: sn.epoch, Overlap: overlap != nil})
	kind := model.FaultUpgrade
	if overlap != nil {
		kind = model.FaultOverlap
		c.Stats.Overlaps++
	}
	c.rec.fault(model.Fault{From: c.Now(), To: -1, Kind: kind, Nodes: []string{sn.id}})
	c.notePeak(sn)
	// Down while it stops, and starting: a crash meanwhile finds it down
	// and a restart finds it starting, so no second incarnation starts.
	sn.up, sn.starting, sn.stopping = false, true, true
	old, oldHooks := sn.n, sn.hooks
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), upgradeStopTimeout)
		old.Stop(ctx)
		cancel()
	}
	c.Stats.Restarts++
	if overlap == nil {
		stop()
		sn.stopping = false
		return c.startNode(sn)
	}
	deregistering, stopped := make(chan struct{}), make(chan struct{})
	oldHooks.onStop, oldHooks.stopLag = func() { close(deregistering) }, overlap.Lag
	go func() {
		defer close(stopped)
		stop()
	}()
	select {
	case <-deregistering:
	case <-stopped:
	}
	err := c.startNode(sn)
	<-stopped
	sn.stopping = false
	c.rec.endFault(model.FaultOverlap, sn.id, c.Now())
	return err
}

// upgradeStopTimeout bounds a graceful stop before the node is cut hard.
const upgradeStopTimeout = 5 * time.Second

// Crash kills node i as a crash would: the incarnation stops at its next
// gate for good (see cut). It does not wait for the incarnation's
// goroutines; teardown does.
func (c *Cluster) Crash(i int) {
	sn := c.nodes[i]
	if !sn.up {
		return
	}
	sn.up = false
	c.Stats.Crashes++
	c.tell(sn.id, NodeCrash{Epoch: sn.epoch})
	c.rec.fault(model.Fault{From: c.Now(), To: -1, Kind: model.FaultCrash, Nodes: []string{sn.id}})
	c.notePeak(sn)
	c.timers.down(sn.id)
	c.cut(sn)
}

// Restart brings a crashed node back with a new epoch.
func (c *Cluster) Restart(i int) error {
	sn := c.nodes[i]
	if sn.up || sn.starting {
		return nil
	}
	c.Stats.Restarts++
	return c.startNode(sn)
}

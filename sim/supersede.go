package sim

import (
	"context"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// lingering is a superseded incarnation still alive (Supersede).
type lingering struct {
	stopNow chan struct{} // closed to stop it at once (teardown)
	done    chan struct{} // closed once it has stopped
}

// Supersede restarts node i while its old incarnation lives on for
// linger, as when an orchestrator starts a replacement for a process it
// believes gone: the old one is cut off from its peers and clients (its
// dials refused, every connection to or from it closed once the new one
// listens) but not from Redis, so its refresh loop keeps running and
// heartbeats after the new incarnation registered. Then it stops
// gracefully (and deregisters). Recorded as a supersede fault on the
// node until the old incarnation has stopped.
func (c *Cluster) Supersede(i int, linger time.Duration) {
	sn := c.nodes[i]
	if !sn.up || sn.starting {
		return
	}
	c.Stats.Restarts++
	c.Stats.Overlaps++
	c.rec.fault(model.Fault{From: c.Now(), To: -1, Kind: model.FaultSupersede, Nodes: []string{sn.id}})
	c.notePeak(sn)
	old := sn.n
	in := c.Net.ConnsTo(sn.id)
	c.Net.CutFrom(sn.tag)
	// Down and starting while the new one starts, and counted as live
	// meanwhile (stopping), as in Replace: its peers' connections to it
	// are not leaks.
	sn.up, sn.stopping = false, true
	if err := c.startNode(sn); err != nil {
		c.Trace.Event(c.Now(), "chaos", "supersede n%d failed: %v", i+1, err)
	}
	sn.stopping = false
	for _, conn := range in {
		_ = conn.Close()
	}
	l := &lingering{stopNow: make(chan struct{}), done: make(chan struct{})}
	c.lingering = append(c.lingering, l)
	id := sn.id
	go func(old *system.Node) {
		defer close(l.done)
		t := time.NewTimer(linger)
		select {
		case <-t.C:
		case <-l.stopNow:
			t.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), upgradeStopTimeout)
		old.Stop(ctx)
		cancel()
		c.rec.endFault(model.FaultSupersede, id, c.Now())
	}(old)
}

// stopLingering stops every superseded incarnation still alive and waits
// for them (teardown, after PassThrough).
func (c *Cluster) stopLingering() {
	for _, l := range c.lingering {
		select {
		case <-l.done:
		default:
			close(l.stopNow)
		}
		<-l.done
	}
	c.lingering = nil
}

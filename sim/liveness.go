package sim

import (
	"fmt"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
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
	c.runSampled(c.Now()+d, every)
	c.Sched.RunFor(c.cfg.Executor.KeepAlive + time.Second)
	c.Sample(true, true)
	return err
}

// runSampled drives the bubble until virtual time end, sampling at every
// quiescent point `every` apart, goroutines included.
func (c *Cluster) runSampled(end, every time.Duration) {
	for c.Now() < end {
		c.Sched.RunUntil(min(end, c.Now()+every))
		c.Sample(false, true)
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
	c.rec.endFault(model.FaultPartition, "", c.Now())
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

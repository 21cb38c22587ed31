// The cluster's control panel as the plan's fault kinds see it
// (plan.Panel): each fault kind's Apply (sim/plan/fault_<kind>.go) does
// its fault through these, and Inject (chaos.go) hands them the panel.

package sim

import (
	"time"

	"github.com/relaysim/relaysim/sim/plan"
)

// panel is the cluster's plan.Panel.
type panel struct{ c *Cluster }

var _ plan.Panel = panel{}

func (p panel) Now() time.Duration { return p.c.Now() }

func (p panel) Crash(node int) { p.c.Crash(node) }

func (p panel) Restart(node int) {
	if err := p.c.Restart(node); err != nil {
		p.c.Trace.Event(p.c.Now(), "chaos", "restart n%d failed: %v", node+1, err)
	}
}

func (p panel) Replace(verb string, node, protocol int, overlap bool, lag time.Duration) {
	var o *Overlap
	if overlap {
		o = &Overlap{Lag: lag}
	}
	if err := p.c.Replace(node, protocol, o); err != nil {
		p.c.Trace.Event(p.c.Now(), "chaos", "%s n%d failed: %v", verb, node+1, err)
	}
}

func (p panel) Protocol(node int) int { return p.c.nodes[node].protocol }

func (p panel) Cut(f Fault) {
	for _, l := range p.c.links(f) {
		p.c.Net.Cut(l[0], l[1])
		p.c.faults.unblip(l) // the partition's heal restores it
	}
}

func (p panel) Heal(f Fault) {
	p.c.rec.endPartition(p.c.linkNodes(f), p.c.Now())
	for _, l := range p.c.links(f) {
		p.c.Net.Uncut(l[0], l[1])
	}
}

func (p panel) Blip(f Fault) {
	for _, l := range p.c.links(f) {
		switch {
		case !f.End && !p.c.Net.Blocked(l[0], l[1]):
			p.c.Net.Cut(l[0], l[1])
			p.c.faults.blip(l)
		case f.End && p.c.faults.unblip(l):
			p.c.Net.Uncut(l[0], l[1])
		}
	}
	if !f.End {
		p.c.blipBurst(f)
	}
}

func (p panel) Pause(node int, until time.Duration) { p.c.Sched.Pause(p.c.nodes[node].id, until) }

func (p panel) RedisOutage(from, to time.Duration) {
	p.c.faults.outages = append(p.c.faults.outages, [2]time.Duration{from, to})
}

func (p panel) RedisSpike(from, to, extra time.Duration) { p.c.faults.addSpike(from, to, extra) }

func (p panel) FlushRoutes() { p.c.FlushRoutes() }

func (p panel) Do(a Action) { p.c.Do(a) }

func (p panel) DoNow(a Action) { p.c.doNow(a) }

func (p panel) Forge(f Forgery, by string) { p.c.Forge(f, by) }

func (p panel) Flood(f Fault) { p.c.flood(f) }

func (p panel) Supersede(node int, linger time.Duration) { p.c.Supersede(node, linger) }

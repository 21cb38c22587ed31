package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/plan"
)

// DrawMix draws a seed's fault mix within b (plan.DrawMix), each knob
// from the sub-seed of seed its name derives.
func DrawMix(seed Seed, b FaultBounds) FaultMix {
	return plan.DrawMix(func(name string) *rand.Rand { return seed.Derive(name).Rand() }, b)
}

// SweepWorlds are a sweep's fault bounds for a seed beyond its defaults:
// for each counted kind with a SweepWorld (plan.Budget.Sweep) whose flag
// the sweep was not given (told), the seed's own draw (a sub-seed of
// the seed named by the world) runs it with -flag=Bound in one seed of
// OneIn, in the mix's order. No other draw moves: each world draws from
// its own generator. A run's replay command names them.
func SweepWorlds(seed Seed, told func(flag string) bool) []string {
	var out []string
	for _, k := range plan.Counted() {
		b := plan.BudgetOf(k)
		if b.Sweep == nil || told(b.Flag) {
			continue
		}
		if seed.Derive(b.Sweep.Name).Rand().IntN(b.Sweep.OneIn) == 0 {
			out = append(out, fmt.Sprintf("-%s=%d", b.Flag, b.Sweep.Bound))
		}
	}
	return out
}

// PlanFaults places the mix's timed faults inside [start, end). Each kind
// is placed by its own generator (a sub-seed of seed, from the kind's
// name), in the registry's order (plan.Registry: Kind.Place), so that the
// plan of one kind does not depend on how many faults of the others the
// mix holds (a kind placed elsewhere, a forgery or a steal, places
// none here); then each fault's follow-up (Kind.Follow: a crash's restart,
// a partition's heal, a blip's end) is added.
func PlanFaults(seed Seed, m FaultMix, nodes int, users []string, start, end time.Duration) []Fault {
	span := end - start
	if span <= 0 {
		return nil
	}
	var fs []Fault
	w := plan.World{Nodes: nodes, Users: users}
	for _, k := range plan.Registry {
		kb := plan.BudgetOf(k)
		if kb.Mix == nil {
			continue // not drawn by count
		}
		r := seed.Derive(string(k.Name())).Rand()
		for range *kb.Mix(&m) {
			at := start + time.Duration(r.Int64N(int64(span))).Truncate(time.Millisecond)
			if f, ok := k.Place(r, at, w); ok {
				fs = append(fs, f)
			}
		}
	}
	for _, f := range fs {
		if k, ok := plan.Lookup(f.Kind); ok {
			if g, ok := k.Follow(f); ok {
				fs = append(fs, g)
			}
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// decide reports whether a fault of probability p hits the op with key, on
// its k-th occurrence: a function of identity, not of arrival order.
func decide(seed Seed, p float64, key string, k int) bool {
	if p <= 0 {
		return false
	}
	return seed.Unit(fmt.Sprintf("%s#%d", key, k)) < p
}

// netDraws are the seed's network-fault draws for one operation (key): the
// same for a relay call and for a relay stream's write or ack. Occurrences
// are counted only when the mix can draw a fault at all (as in redisGate).
type netDraws struct {
	c   *Cluster
	key string
	k   int
}

func (c *Cluster) netDraws(key string) netDraws {
	d := netDraws{c: c, key: key}
	if c.faults.on && c.faults.mix.NetFaults() {
		d.k = c.faults.occurrence("net|" + key)
	}
	return d
}

// hit draws fault kind ("drop-req", "drop-resp", "dup", "delay") of
// probability p.
func (d netDraws) hit(kind string, p float64) bool {
	return d.c.faults.on && decide(d.c.seeds.faults.Derive("net").Derive(kind), p, d.key, d.k)
}

// delayBy is how long a drawn delay holds the operation: 1 ms to 2 s.
func (d netDraws) delayBy() time.Duration {
	return time.Duration(1+d.c.seeds.faults.Derive("net").Derive("delay-by").Unit(d.key)*2000) * time.Millisecond
}

// MarkOverlaps draws, for each crash and upgrade of a plan, whether it
// overlaps incarnations (probability p) and the stopping incarnation's
// lag (0 to maxStopLag, in whole milliseconds), from its own seed: every
// crash and upgrade draws both, so the draws of one fault do not depend
// on p.
func MarkOverlaps(seed Seed, fs []Fault, p float64) {
	r := seed.Rand()
	for i := range fs {
		if fs[i].Kind == model.FaultCrash || fs[i].Kind == model.FaultUpgrade {
			on, lag := r.Float64() < p, time.Duration(r.IntN(int(maxStopLag/time.Millisecond)+1))*time.Millisecond
			if on {
				fs[i].Overlap, fs[i].Lag = true, lag
			}
		}
	}
}

// maxStopLag is the most an overlapping restart's stopping incarnation is
// held after each command of its stop.
const maxStopLag = 20 * time.Millisecond

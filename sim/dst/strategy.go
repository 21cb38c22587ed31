package dst

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Strategy chooses which ready op runs next, and may instead delay it (so a
// schedule explores timing, not only the order of ops parked at the same
// instant). ready is sorted by key; it is reused after the call (do not
// keep it).
type Strategy interface {
	Pick(ready []*Op, now time.Duration) (index int, delay time.Duration)
	Name() string
}

// Chooser is a source of choices: a seeded generator, or rapid draws (so
// that rapid shrinks schedules along with the actions).
type Chooser interface {
	IntN(n int) int
}

// Random picks uniformly, and with probability DelayP delays the op by up to
// MaxDelay.
type Random struct {
	C        Chooser
	DelayP   float64 // in per-mille steps
	MaxDelay time.Duration
}

func (r *Random) Name() string { return "random" }

func (r *Random) Pick(ready []*Op, _ time.Duration) (int, time.Duration) {
	i := 0
	if len(ready) > 1 {
		i = r.C.IntN(len(ready))
	}
	if r.MaxDelay > 0 && r.DelayP > 0 && r.C.IntN(1000) < int(r.DelayP*1000) {
		return i, time.Duration(1+r.C.IntN(int(r.MaxDelay/time.Millisecond))) * time.Millisecond
	}
	return i, 0
}

// PCT is priority-based scheduling (Burckhardt et al.): each op gets a random
// priority when first seen; the highest-priority ready op runs; at D change
// points, drawn over the first Steps steps, the running op's priority drops
// below all others and it is delayed by up to MaxDelay.
type PCT struct {
	rng      *rand.Rand
	prio     pctPriorities
	changes  map[int]bool
	step     int
	MaxDelay time.Duration
	D        int
}

// pctPriorities are PCT's op priorities (the scheduler's PCT and the
// explorer's Sampler): drawn from rng on an op key's first sight, all
// above the demoted ones, each of which goes below every other.
type pctPriorities struct {
	rng  *rand.Rand
	prio map[string]int
	low  int
}

func newPCTPriorities(rng *rand.Rand) pctPriorities {
	return pctPriorities{rng: rng, prio: map[string]int{}}
}

// of is key's priority, drawn when first seen.
func (p *pctPriorities) of(key string) int {
	v, ok := p.prio[key]
	if !ok {
		v = 1_000_000 + p.rng.IntN(1_000_000)
		p.prio[key] = v
	}
	return v
}

// demote puts key below every other (a change point).
func (p *pctPriorities) demote(key string) {
	p.low--
	p.prio[key] = p.low
}

// NewPCT returns a PCT strategy with d priority changes over the first steps.
func NewPCT(seed Seed, d, steps int, maxDelay time.Duration) *PCT {
	rng := seed.Rand()
	p := &PCT{rng: rng, prio: newPCTPriorities(rng), changes: map[int]bool{}, MaxDelay: maxDelay, D: d}
	for range d {
		p.changes[p.rng.IntN(max(steps, 1))] = true
	}
	return p
}

func (p *PCT) Name() string { return fmt.Sprintf("pct(d=%d)", p.D) }

func (p *PCT) Pick(ready []*Op, _ time.Duration) (int, time.Duration) {
	best := 0
	for i, op := range ready {
		if p.prio.of(op.Key) > p.prio.of(ready[best].Key) {
			best = i
		}
	}
	p.step++
	if p.changes[p.step] {
		p.prio.demote(ready[best].Key)
		if p.MaxDelay > 0 {
			return best, time.Duration(1+p.rng.IntN(int(p.MaxDelay/time.Millisecond))) * time.Millisecond
		}
	}
	return best, 0
}

// Exhaustive enumerates schedules depth-first across runs: each run follows
// a prefix of choices and takes the first alternative after it; Next moves to
// the next unexplored schedule. An alternative other than the first counts
// as a preemption, bounded by Bound. With Delay > 0 every op may also be
// delayed once by Delay (alternatives len(ready)..2*len(ready)-1).
type Exhaustive struct {
	Bound int
	Delay time.Duration
	// prefix to replay, and what this run chose: chosen[i] of options[i].
	prefix  []int
	chosen  []int
	options []int
	// Explored counts the schedules run so far.
	Explored int
}

func (e *Exhaustive) Name() string { return fmt.Sprintf("exhaustive(bound=%d)", e.Bound) }

func (e *Exhaustive) Pick(ready []*Op, _ time.Duration) (int, time.Duration) {
	n := len(ready)
	if e.Delay > 0 {
		n *= 2
	}
	if n == 1 {
		return 0, 0
	}
	c := 0
	if d := len(e.chosen); d < len(e.prefix) {
		c = e.prefix[d]
	}
	e.chosen = append(e.chosen, c)
	e.options = append(e.options, n)
	if c >= len(ready) {
		return c - len(ready), e.Delay
	}
	return c, 0
}

// Replay returns a strategy that follows this run's schedule again.
func (e *Exhaustive) Replay() *Exhaustive {
	return &Exhaustive{Bound: e.Bound, Delay: e.Delay, prefix: append([]int(nil), e.chosen...), Explored: e.Explored}
}

// Next prepares the next schedule; false when every schedule within the
// bound has been explored.
func (e *Exhaustive) Next() bool {
	e.Explored++
	used := 0
	for _, c := range e.chosen {
		if c != 0 {
			used++
		}
	}
	for d := len(e.chosen) - 1; d >= 0; d-- {
		c := e.chosen[d]
		if c != 0 {
			used--
		}
		if c+1 < e.options[d] && used+1 <= e.Bound {
			e.prefix = append(append([]int(nil), e.chosen[:d]...), c+1)
			e.chosen, e.options = nil, nil
			return true
		}
	}
	return false
}

// First always runs the lowest-keyed ready op: the explorer's runs use it
// outside their explored window (setup, and the liveness phase after the
// horizon), and a run's scheduler "first" is it, the schedule with no
// choice in it that the shrinker prefers.
type First struct{}

func (First) Name() string { return "first" }

func (First) Pick([]*Op, time.Duration) (int, time.Duration) { return 0, 0 }

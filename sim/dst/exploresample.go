// The search's randomized fallback: when a search cannot finish (a
// schedule limit, a time budget), a Sampler draws whole schedules over the
// same choices the search makes — which parked op runs, which fault it
// takes, when a crash fires — the way PCT (Burckhardt et al., ASPLOS 2010)
// draws thread schedules: every op key gets a random priority, the highest
// ready one runs, and at Depth change points the running op's priority
// drops below all others. A schedule drawn is a schedule like any other:
// its choices are recorded at each level and replay by op key.

package dst

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// Sampler draws the choices of one explorer's runs (Explorer.Sample).
// Its draws come from Seed alone, one run after another: the same seed,
// the same runs, whatever ran before them.
type Sampler struct {
	// Seed is the sampler's own seed; Depth its priority change points
	// per run (PCT's d).
	Seed  Seed
	Depth int
	// Steps is the expected number of choices of a run, over which the
	// change points are drawn. Each run raises it to the most choices a
	// sampled run made so far; 0 starts from 16.
	Steps int

	rng     *rand.Rand
	prio    pctPriorities
	step    int
	changes map[int]bool
	// faultAt holds, per fault class, the opportunities (ops offering a
	// fault of the class, levels with a crash of it parked) at which a
	// fault of it is due, sorted: a due fault is taken at that
	// opportunity or the first after it. seen counts the run's
	// opportunities so far; offers the most a run has had, over which the
	// next runs draw (plus one: a draw past them is no fault).
	faultAt      map[string][]int
	seen, offers map[string]int
}

// NewSampler returns a PCT sampler of depth d.
func NewSampler(seed Seed, d int) *Sampler {
	return &Sampler{Seed: seed, Depth: d}
}

func (s *Sampler) String() string { return fmt.Sprintf("pct(d=%d, seed %s)", s.Depth, s.Seed) }

// begin draws a run's change points and fault points.
func (s *Sampler) begin(budget map[string]int) {
	if s.rng == nil {
		s.rng = s.Seed.Rand()
	}
	if s.Steps <= 0 {
		s.Steps = 16
	}
	s.prio, s.step = newPCTPriorities(s.rng), 0
	s.changes = map[int]bool{}
	for range s.Depth {
		s.changes[s.rng.IntN(s.Steps)] = true
	}
	s.faultAt, s.seen = map[string][]int{}, map[string]int{}
	if s.offers == nil {
		s.offers = map[string]int{}
	}
	classes := make([]string, 0, len(budget))
	for cls, n := range budget {
		if n > 0 {
			classes = append(classes, cls)
		}
	}
	sort.Strings(classes) // the draws' order: never the map's
	for _, cls := range classes {
		at := make([]int, budget[cls])
		for i := range at {
			at[i] = 1 + s.rng.IntN(s.offers[cls]+1)
		}
		sort.Ints(at)
		s.faultAt[cls] = at
	}
}

// end learns the run's length and opportunities for the next runs' draws.
func (s *Sampler) end(depth int) {
	s.Steps = max(s.Steps, depth)
	for cls, n := range s.seen {
		s.offers[cls] = max(s.offers[cls], n)
	}
}

// due counts an opportunity of class cls and reports whether a fault of
// it is due there, within the budget (faults used before this level,
// l.faults).
func (s *Sampler) due(l *level, cls string, budget map[string]int) bool {
	s.seen[cls]++
	at := s.faultAt[cls]
	return len(at) > 0 && at[0] <= s.seen[cls] && l.faults[cls] < budget[cls]
}

func (s *Sampler) spend(cls string) { s.faultAt[cls] = s.faultAt[cls][1:] }

// pick is the sampled choice at a level with something ready: a due
// crash fires, else the ready op of the highest priority runs (at a
// change point the one that would have run is demoted first), with a
// due fault it offers.
func (s *Sampler) pick(l *level, ready, lazy []*Op, budget map[string]int) string {
	defer func() { s.step++ }()
	if c := s.crash(l, lazy, budget); c != "" {
		return c
	}
	best := func() *Op {
		var b *Op
		for _, op := range ready { // key order: ties go to the lowest key
			if b == nil || s.prio.of(op.Key) > s.prio.of(b.Key) {
				b = op
			}
		}
		return b
	}
	op := best()
	if s.changes[s.step] && len(ready) > 1 {
		s.prio.demote(op.Key)
		op = best()
	}
	ci := infoOf(op)
	offers := append([]string(nil), ci.faults...)
	if ci.delay {
		offers = append(offers, "delay")
	}
	sort.Strings(offers)
	for _, f := range offers {
		if s.due(l, f, budget) {
			s.spend(f)
			return faultChoice(op.Key, f)
		}
	}
	return op.Key
}

// barrier is the sampled choice where nothing is ready (and at the
// horizon): a due crash fires, else time runs on.
func (s *Sampler) barrier(l *level, lazy []*Op, budget map[string]int) string {
	defer func() { s.step++ }()
	if c := s.crash(l, lazy, budget); c != "" {
		return c
	}
	return tick
}

// crash fires a lazy op of a due class (one drawn among those of it
// parked): each class parked here is one opportunity.
func (s *Sampler) crash(l *level, lazy []*Op, budget map[string]int) string {
	var classes []string
	for _, op := range lazy {
		if !slices.Contains(classes, op.Class) {
			classes = append(classes, op.Class)
		}
	}
	sort.Strings(classes)
	for _, cls := range classes {
		if !s.due(l, cls, budget) {
			continue
		}
		var can []*Op
		for _, op := range lazy {
			if op.Class == cls {
				can = append(can, op)
			}
		}
		op := can[s.rng.IntN(len(can))]
		s.spend(cls)
		return op.Key
	}
	return ""
}

// The registry of timed fault kinds: each kind is one type in a file of
// its own (fault_<kind>.go) that says its name, its budget (the runner's
// bound and the mix's count), its draw, its trace and plan text and how
// it is applied; Registry lists them.

package plan

import (
	"math/rand/v2"
	"sort"
	"time"
)

// Kind is one kind of timed fault.
type Kind interface {
	// Name is the kind's one spelling (model's FaultKind).
	Name() FaultKind
	// Budget is how many of it a seed may draw and did (Budget.Knob ""
	// for a kind that is not drawn by count: a follow-up or an upgrade).
	Budget() Budget
	// Place draws one fault of the kind at at from the kind's own
	// generator r (false: none this time); Follow is the fault that ends
	// f, if any (a crash's restart, a partition's heal).
	Place(r *rand.Rand, at time.Duration, w World) (Fault, bool)
	Follow(f Fault) (Fault, bool)
	// Trace is f's trace text (Fault.String; the trace hashes it).
	Trace(f Fault) string
	// Head is f's plan-text head and the fields it says (keys of
	// faultKeys); Heads are the words such a head may start with, and
	// ReadHead reads the rest of a head that started with word into f.
	Head(f Fault) (string, []string)
	Heads() []string
	ReadHead(h *headReader, word string, f *Fault)
	// Touches is what the oracle's record of f names.
	Touches(f Fault) Touch
	// Apply does f to the system now, through the harness's panel.
	Apply(p Panel, f Fault)
}

// Budget is a kind's count knob: the mix's key (also the name its draws'
// sub-seed derives from: renaming it moves every drawn fault), the
// runner's flag, and the bound's and the mix's fields. MixRank orders the
// mix's keys (FormatMix, FaultMix.String); a new kind takes the next (at
// most MaxMixRank). A kind that leaves Bound and Mix nil keeps its count
// in FaultBounds.Counts and FaultMix.Counts at its MixRank (BudgetOf). A
// kind whose bound is 0 by default may name the share of seeds a sweep
// runs it in (Sweep).
type Budget struct {
	Knob    string
	Flag    string
	Usage   string
	Bound   func(*FaultBounds) *int
	Mix     func(*FaultMix) *int
	MixRank int
	Sweep   *SweepWorld
}

// MaxMixRank is the highest MixRank a kind may take.
const MaxMixRank = 31

// SweepWorld is a kind's share of a sweep's seeds: a seed the sweep is
// not told the kind's bound of (its Flag) runs with Flag=Bound when its
// sub-seed Name (the kind's Knob + "-sweep" if empty) draws 0 of
// Rand().IntN(OneIn), from a generator of its own so that no other draw
// moves.
type SweepWorld struct {
	Name         string
	OneIn, Bound int
}

// BudgetOf is k's budget with its count fields resolved: a counted kind
// (Knob set) whose Budget names no field keeps its count at its MixRank.
func BudgetOf(k Kind) Budget {
	b := k.Budget()
	if b.Knob == "" {
		return b
	}
	rank := b.MixRank
	if b.Bound == nil {
		b.Bound = func(fb *FaultBounds) *int { return &fb.Counts[rank] }
	}
	if b.Mix == nil {
		b.Mix = func(m *FaultMix) *int { return &m.Counts[rank] }
	}
	if b.Sweep != nil && b.Sweep.Name == "" {
		w := *b.Sweep
		w.Name = b.Knob + "-sweep"
		b.Sweep = &w
	}
	return b
}

// World is what a fault's draw may pick from.
type World struct {
	Nodes int
	Users []string
}

// Touch is what the oracle's record of a timed fault names.
type Touch int

// What a timed fault's record names.
const (
	TouchNone  Touch = iota // no record of its own (its call's event, or its node's)
	TouchTime               // only its time
	TouchLinks              // the nodes whose links it cuts, until its heal
	TouchNode               // its node
	TouchRedis              // Redis
	TouchUser               // its user
)

// Panel is the harness's control panel: what a fault's Apply may do to
// the system. The harness (sim) implements it.
type Panel interface {
	Now() time.Duration
	// Crash stops node as a process does; Restart brings it back;
	// Replace restarts it (gracefully) with protocol, overlapping the
	// incarnations with lag if overlap (verb names it in a failure).
	Crash(node int)
	Restart(node int)
	Replace(verb string, node, protocol int, overlap bool, lag time.Duration)
	Protocol(node int) int
	// Cut cuts f's links until their heal, Heal restores them, Blip cuts
	// (or, at its end, restores) a blip's.
	Cut(f Fault)
	Heal(f Fault)
	Blip(f Fault)
	Pause(node int, until time.Duration)
	RedisOutage(from, to time.Duration)
	RedisSpike(from, to, extra time.Duration)
	FlushRoutes()
	// Do has a user's client do a (its own goroutine's way), DoNow does
	// it at once, Forge makes a forged call by user by.
	Do(a Action)
	DoNow(a Action)
	// Stall has user's client stop reading for dur (0: until the
	// liveness phase), after going offline for lag with a burst of large
	// messages sent to one of its rooms meanwhile (lag 0: at once, on its
	// open stream).
	Stall(user string, lag, dur time.Duration)
	Forge(f Forgery, by string)
	// Flood takes f.User offline while its room gets a backlog, and
	// brings it back on f.Node after f.For.
	Flood(f Fault)
	// Supersede restarts node while its old incarnation lives on, cut
	// off from peers and clients but not from Redis, for linger.
	Supersede(node int, linger time.Duration)
}

// Registry lists every timed fault kind, in the order their faults are
// drawn (PlanFaults): a new kind goes last.
var Registry = []Kind{
	crash{}, partition{}, pause{}, redisOutage{}, redisSpike{}, routeFlush{}, vanish{}, slow{}, blip{},
	restart{}, upgrade{}, heal{}, forge{}, steal{}, redisRewind{}, flood{}, supersede{},
	stall{}, redisFailover{},
}

// Lookup returns the registered kind named k.
func Lookup(k FaultKind) (Kind, bool) {
	for _, x := range Registry {
		if x.Name() == k {
			return x, true
		}
	}
	return nil, false
}

// ByKnob returns the registered kind whose mix knob is knob.
func ByKnob(knob string) (Kind, bool) {
	for _, x := range Registry {
		if x.Budget().Knob == knob && knob != "" {
			return x, true
		}
	}
	return nil, false
}

// byHead returns the registered kind whose plan-text head starts with word.
func byHead(word string) (Kind, bool) {
	for _, x := range Registry {
		for _, h := range x.Heads() {
			if h == word {
				return x, true
			}
		}
	}
	return nil, false
}

// Counted are the registered kinds drawn by count, in their mix order.
func Counted() []Kind {
	var out []Kind
	for _, k := range Registry {
		if k.Budget().Knob != "" {
			out = append(out, k)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Budget().MixRank < out[j].Budget().MixRank })
	return out
}

// Dur draws a duration in [lo, hi), whole milliseconds.
func Dur(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo))).Truncate(time.Millisecond)
}

// noPlace, noFollow and noBudget are the defaults of a kind that is not
// drawn by count, ends nothing or has no budget.
type (
	noPlace  struct{}
	noFollow struct{}
	noBudget struct{}
)

func (noPlace) Place(*rand.Rand, time.Duration, World) (Fault, bool) { return Fault{}, false }
func (noFollow) Follow(Fault) (Fault, bool)                          { return Fault{}, false }
func (noBudget) Budget() Budget                                      { return Budget{} }

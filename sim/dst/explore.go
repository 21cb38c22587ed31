package dst

import (
	"strings"
)

// explore*.go are the model checker's search: stateless dynamic partial-order
// reduction over re-executions from scratch (there is no fork), after
// Flanagan and Godefroid (POPL 2005) with sleep sets (Godefroid 1996), with
// optional preemption bounding made sound for the reduction the way Coons,
// Musuvathi and McKinley's BPOR (2013) does it, and with faults as choices
// within budgets.
//
// The unit is an event: one choice of the driver at a quiet point — release
// a parked op (plainly, or with a fault the harness can carry out there),
// fire a lazy op (a crash), or let virtual time run (a barrier). An event's
// effect is everything that runs until the bubble is quiet again, so its
// footprint is its op's (GateSpec.Touch). An op that parks while an event
// runs is caused by it (its parent): with the order of dependent events,
// that is the happens-before relation the search reverses races against.
//
// Choices are named by op key, never by index: a schedule is the list of
// choices, one per line (Schedule, ParseSchedule), and replaying it asserts
// at every step that the named op is parked and ready — a divergence is a
// determinism bug and is reported as one.
//
// This file holds the search tree: the Explorer, its levels (the choices
// at one quiet point, with their backtrack and sleep sets) and the events
// of a run. explorestep.go makes a run's choices, exploreraces.go analyses
// the races and backtracks, explorebound.go is BPOR's bound and
// explorereplay.go the schedule for replay.

// Explorer is the search. Set it as Scheduler.Explorer on every run, Arm it
// where the story's concurrent steps begin, Disarm it at the horizon, and
// call Next after each run until it returns false.
type Explorer struct {
	// Reduce selects DPOR with sleep sets; false runs the naive
	// depth-first search over every interleaving (for comparison).
	Reduce bool
	// Bound is the preemption bound (< 0: none). A preemption is a pick
	// other than the causal chain's continuation while the chain can go on
	// (CHESS); a pick when the chain has nothing parked is free.
	Bound int
	// Budget caps the faults of each class per schedule ("drop", "delay",
	// "error", "crash", ...). A class not named has no budget (0).
	Budget map[string]int
	// Replay, when set, is a schedule to follow exactly once (Next then
	// returns false).
	Replay []string
	// LowestKey makes the default pick the lowest key, not the causal
	// chain's continuation: two runs whose prefixes differ only in the
	// order of commuting ops then continue alike (the commutation check).
	LowestKey bool
	// DepthBudget, when > 0, is a depth budget: no alternative is explored
	// at a choice deeper than it (DepthHit counts those left out).
	DepthBudget int
	// RandomPick, when set, makes the default pick ready[RandomPick(n)]:
	// the commutation check's base runs, drawn to park many ops at once.
	RandomPick func(n int) int
	// Sample, when set, draws every choice of a run from a seeded PCT
	// sampler (exploresample.go) instead of searching: Next does no race
	// analysis and always returns true (the caller caps the schedules).
	Sample *Sampler

	armed   bool
	tree    []*level
	prefix  []string // the choices to replay this run, one per level
	depth   int
	events  []event
	blocked int // level at which the run was sleep-blocked (-1: none)
	// opEvent maps an op instance (Op.arrival) to its latest event of this
	// run (a delayed op's release follows its delay). By instance, not by
	// key: a key names one op only while it is parked, and a later op of
	// the same key (a retry, a resent item) is another instance, not
	// ordered after the first by the key alone.
	opEvent map[uint64]int
	ticked  bool // a barrier was offered since the last release
	// passed: virtual time ran on since the last level (every sleeping
	// op wakes: a barrier is dependent with everything).
	passed bool

	// Schedules counts the runs started; Blocked those that ended in a
	// sleep set (redundant); MaxDepth the most choices a run made.
	Schedules, Blocked, MaxDepth int
	// BoundHit and BudgetHit count choices left out by the bound or the
	// fault budgets (so "exhausted" is read with them).
	BoundHit, BudgetHit, DepthHit int
	// BoundHeld counts the default picks the bound kept on the chain
	// while another op was awake (a redundant run that an unbounded
	// search would have continued): with BoundHit zero too, the bound
	// refused nothing, and a higher bound runs the same schedules.
	BoundHeld int
	// BudgetHitBy is BudgetHit per fault class.
	BudgetHitBy map[string]int
	// Divergence is set when a replayed choice was not ready: the run did
	// not repeat itself (a determinism bug).
	Divergence error
}

// level is the state before one choice.
type level struct {
	enabled   []choiceInfo // every choice possible here, in key order
	chain     map[string]bool
	chosen    string
	backtrack map[string]bool
	done      map[string]bool
	sleep     map[string][]Access
	preempt   int            // preemptions used before this level
	faults    map[string]int // faults used before this level, per class
	// preempted: the choice made here was a preemption.
	preempted bool
}

// choiceInfo is an op parked at a level (or a fault variant of it).
type choiceInfo struct {
	key    string // op key
	inst   uint64 // op instance (Op.arrival): unique in a run
	touch  []Access
	node   string
	parent int
	lazy   bool
	class  string
	faults []string
	delay  bool // "delay" is offered
}

// event is one executed choice.
type event struct {
	choice  string
	key     string // op key ("" for a barrier)
	inst    uint64 // op instance (0 for a barrier)
	touch   []Access
	all     bool // a barrier: dependent with everything
	parent  int
	prev    int // the same op instance's earlier event (a delay), or -1
	level   int // -1: no choice was made (a barrier with nothing to fire)
	preempt bool
	lazy    bool // a lazy op fired
	timer   bool // the lazy op fired was the clock's (TimerClass)
}

// Fault choices are "key!fault"; a lazy op fires as its key; a barrier
// that fires nothing is tick.
const tick = "@tick"

// TimerClass is the budget class of timers fired early (Budget[TimerClass]
// > 0 offers them): a lazy op of the clock, TimerKey, parked while the
// explorer is armed, that only the explorer fires. Firing it lets virtual
// time run on while ops are still ready — as if all the work in flight
// were slow — until the next timer of the bubble makes something park at
// a gate (or the driver's own end): the earliest due timers fire between
// two steps of work in flight, not only once it is all done. The driver
// cannot tell whose timer fires next (the system under test uses the
// bubble's clock directly), so the op's footprint is unknown: dependent
// with everything. It is offered only where something is ready (where
// nothing is, time runs on anyway: a barrier) and not at the horizon.
const TimerClass = "timer"

// TimerKey is the clock's lazy op: node "clock", kind "timer", id "next".
const TimerKey = timerNode + "|" + TimerClass + "|next"

const timerNode = "clock"

func faultChoice(key, f string) string { return key + "!" + f }

func splitChoice(c string) (key, fault string) {
	if i := strings.LastIndexByte(c, '!'); i >= 0 {
		return c[:i], c[i+1:]
	}
	return c, ""
}

// NewExplorer returns a search.
func NewExplorer(reduce bool, bound int, budget map[string]int) *Explorer {
	return &Explorer{Reduce: reduce, Bound: bound, Budget: budget}
}

func infoOf(op *Op) choiceInfo {
	return choiceInfo{key: op.Key, inst: op.arrival, touch: op.Touch, node: op.Node, parent: op.parent, lazy: op.Lazy, class: op.Class,
		faults: op.Faults, delay: op.FaultDelay > 0 && !op.delayed}
}

// newLevel builds the level at e.depth from what is parked.
func (e *Explorer) newLevel(ready, lazy []*Op) *level {
	l := &level{backtrack: map[string]bool{}, done: map[string]bool{}, sleep: map[string][]Access{},
		chain: map[string]bool{}, faults: map[string]int{}}
	defer func() { e.passed = false }()
	// The chain goes on from the last event; a lazy op's firing (a crash)
	// does not end the chain it interrupted, so it is no free switch. A
	// timer fired early does: what it woke is the chain now (the work it
	// interrupted waits, as slow work does).
	from := map[int]bool{}
	for k := len(e.events) - 1; k >= 0; k-- {
		from[k] = true
		if !e.events[k].lazy || e.events[k].timer {
			break
		}
	}
	for _, op := range ready {
		l.enabled = append(l.enabled, infoOf(op))
		// The chain goes on with one op: the lowest key the last event
		// parked (ready is in key order). Its siblings are new chains, and
		// starting one while it can go on is a preemption, as starting a
		// new thread is in CHESS: so a bounded search has no free choice
		// that BPOR's switch points would not see.
		if from[op.parent] && len(l.chain) == 0 {
			l.chain[op.Key] = true
		}
	}
	for _, op := range lazy {
		l.enabled = append(l.enabled, infoOf(op))
	}
	if d := e.depth; d > 0 {
		p := e.tree[d-1]
		l.preempt = p.preempt
		for k, v := range p.faults {
			l.faults[k] = v
		}
		if p.preempted {
			l.preempt++
		}
		if cls := p.classOf(p.chosen); cls != "" {
			l.faults[cls]++
		}
		if e.Reduce && !e.passed {
			ct := p.touchOf(p.chosen)
			for k, t := range p.sleep {
				if k != p.chosen && !Dependent(t, ct) {
					l.sleep[k] = t
				}
			}
			for k := range p.done {
				if t := p.touchOf(k); k != p.chosen && !Dependent(t, ct) {
					l.sleep[k] = t
				}
			}
		}
	}
	return l
}

// info returns the enabled op of key at this level.
func (l *level) info(key string) (choiceInfo, bool) {
	for _, c := range l.enabled {
		if c.key == key {
			return c, true
		}
	}
	return choiceInfo{}, false
}

// touchOf is a choice's footprint: its op's, and for a fault its node's
// memory too (the caller handles the failure there).
func (l *level) touchOf(c string) []Access {
	if c == tick {
		return nil
	}
	key, f := splitChoice(c)
	ci, ok := l.info(key)
	if !ok {
		return nil
	}
	if f == "" || ci.touch == nil {
		return ci.touch
	}
	return append(append([]Access(nil), ci.touch...), W("node:"+ci.node))
}

// classOf is the fault class a choice spends ("" for a plain release).
func (l *level) classOf(c string) string {
	key, f := splitChoice(c)
	if f != "" {
		return f
	}
	if ci, ok := l.info(key); ok && ci.lazy {
		return ci.class
	}
	return ""
}

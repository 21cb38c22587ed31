package dst

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// This file is the model checker's search: stateless dynamic partial-order
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

	armed   bool
	tree    []*level
	prefix  []string // the choices to replay this run, one per level
	depth   int
	events  []event
	blocked int // level at which the run was sleep-blocked (-1: none)
	// opEvent maps an op key to its latest event of this run (a delayed
	// op's release follows its delay).
	opEvent map[string]int
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
	touch   []Access
	all     bool // a barrier: dependent with everything
	parent  int
	prev    int // the same op's earlier event (a delay), or -1
	level   int // -1: no choice was made (a barrier with nothing to fire)
	preempt bool
	lazy    bool // a lazy op fired
}

// Fault choices are "key!fault"; a lazy op fires as its key; a barrier
// that fires nothing is tick.
const tick = "@tick"

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

// Arm starts the choices of one run (the story's concurrent steps begin).
func (e *Explorer) Arm(s *Scheduler) {
	e.armed = true
	e.depth, e.events, e.blocked, e.ticked = 0, e.events[:0], -1, false
	e.opEvent = map[string]int{}
	if e.Replay != nil && e.Schedules == 0 {
		e.prefix = e.Replay
	}
	e.Schedules++
	s.lock <- struct{}{}
	s.cur = -1
	<-s.lock
}

// Disarm ends the choices of this run (the horizon): a last level offers
// the lazy ops still parked (a crash at the end), then the run goes on
// with default picks and no events.
func (e *Explorer) Disarm(s *Scheduler) (fired bool) {
	if !e.armed {
		return false
	}
	s.lock <- struct{}{}
	var lazy []*Op
	for _, op := range s.sorted {
		if op.Lazy {
			lazy = append(lazy, op)
		}
	}
	<-s.lock
	if len(lazy) > 0 && e.blocked < 0 {
		if op := e.barrierChoice(lazy); op != nil {
			e.fire(s, op)
			fired = true
		}
	}
	if e.depth < len(e.prefix) && e.Divergence == nil {
		e.Divergence = fmt.Errorf("replay diverged: the run ended after %d choices of the %d it should repeat", e.depth, len(e.prefix))
	}
	e.armed = false
	return fired
}

// exploreStep makes one choice at a quiet point; false when nothing runs
// now (virtual time may advance: a barrier).
func (s *Scheduler) exploreStep(ready, lazy []*Op, now time.Duration) bool {
	e := s.Explorer
	if len(ready) == 0 {
		if e.ticked {
			return false
		}
		e.ticked = true
		if len(lazy) > 0 && e.blocked < 0 {
			if op := e.barrierChoice(lazy); op != nil {
				e.fire(s, op)
				return true
			}
		} else {
			e.record(event{choice: tick, all: true, parent: -1, prev: -1, level: -1})
		}
		s.lock <- struct{}{}
		s.cur = len(e.events) - 1
		<-s.lock
		return false
	}
	op, fault := e.choose(ready, lazy)
	if op.Lazy {
		e.fire(s, op)
		return true
	}
	s.lock <- struct{}{}
	s.cur = len(e.events) - 1
	if fault == "delay" {
		op.ReadyAt = now + op.FaultDelay
		op.delayed = true
		op.fault = "delay" // Gate returns it when the op runs at last
		<-s.lock
		s.trace.Event(now, op.Node, "explore: delay %s %s by %v", op.Kind, op.ID, op.FaultDelay)
		return true
	}
	if fault != "" {
		op.fault = fault
	}
	s.unpark(op)
	<-s.lock
	s.Steps++
	if fault != "" {
		s.trace.Event(now, op.Node, "explore: %s %s %s", fault, op.Kind, op.ID)
	} else {
		s.trace.Op(now, op.Node, op.Kind, op.ID)
	}
	if s.OnRelease != nil {
		s.OnRelease(op, now)
	}
	close(op.release)
	e.ticked = false
	return true
}

// fire releases a lazy op with "fire".
func (e *Explorer) fire(s *Scheduler, op *Op) {
	s.lock <- struct{}{}
	s.cur = len(e.events) - 1
	op.fault = "fire"
	s.unpark(op)
	<-s.lock
	s.Steps++
	s.trace.Event(s.Now(), op.Node, "explore: fire %s %s", op.Kind, op.ID)
	close(op.release)
	e.ticked = false
}

func infoOf(op *Op) choiceInfo {
	return choiceInfo{key: op.Key, touch: op.Touch, node: op.Node, parent: op.parent, lazy: op.Lazy, class: op.Class,
		faults: op.Faults, delay: op.FaultDelay > 0 && !op.delayed}
}

// newLevel builds the level at e.depth from what is parked.
func (e *Explorer) newLevel(ready, lazy []*Op) *level {
	l := &level{backtrack: map[string]bool{}, done: map[string]bool{}, sleep: map[string][]Access{},
		chain: map[string]bool{}, faults: map[string]int{}}
	defer func() { e.passed = false }()
	// The chain goes on from the last event; a lazy op's firing (a crash)
	// does not end the chain it interrupted, so it is no free switch.
	from := map[int]bool{}
	for k := len(e.events) - 1; k >= 0; k-- {
		from[k] = true
		if !e.events[k].lazy {
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

// choose picks the op to run at a quiet point with something ready.
func (e *Explorer) choose(ready, lazy []*Op) (*Op, string) {
	var l *level
	if e.depth < len(e.tree) {
		l = e.tree[e.depth]
	} else {
		l = e.newLevel(ready, lazy)
		e.tree = append(e.tree, l)
	}
	c := ""
	if e.depth < len(e.prefix) {
		c = e.prefix[e.depth]
	} else {
		c = e.defaultPick(l, ready)
	}
	key, fault := splitChoice(c)
	op := findOp(ready, lazy, key)
	if op == nil {
		if e.Divergence == nil {
			e.Divergence = fmt.Errorf("replay diverged at choice %d: %q is not parked and ready (parked: %s)", e.depth+1, c, keysOf(ready, lazy))
		}
		c = e.defaultPick(l, ready)
		key, fault = splitChoice(c)
		op = findOp(ready, lazy, key)
	}
	l.chosen = c
	l.done[c] = true
	preempt := !op.Lazy && len(l.chain) > 0 && !l.chain[key]
	l.preempted = preempt
	e.record(event{choice: c, key: key, touch: l.touchOf(c), parent: op.parent, prev: e.prevOf(key), level: e.depth, preempt: preempt, lazy: op.Lazy})
	e.depth++
	e.MaxDepth = max(e.MaxDepth, e.depth)
	return op, fault
}

// barrierChoice offers the lazy ops at a quiet point with nothing else
// ready (and at the horizon): nil lets time run on.
func (e *Explorer) barrierChoice(lazy []*Op) *Op {
	var l *level
	if e.depth < len(e.tree) {
		l = e.tree[e.depth]
	} else {
		l = e.newLevel(nil, lazy)
		e.tree = append(e.tree, l)
	}
	c := tick
	if e.depth < len(e.prefix) {
		c = e.prefix[e.depth]
	}
	var op *Op
	if c != tick {
		if op = findOp(nil, lazy, c); op == nil && e.Divergence == nil {
			e.Divergence = fmt.Errorf("replay diverged at choice %d: %q is not parked (parked: %s)", e.depth+1, c, keysOf(nil, lazy))
			c = tick
		}
	}
	l.chosen = c
	l.done[c] = true
	l.preempted = false
	ev := event{choice: c, all: c == tick, parent: -1, prev: -1, level: e.depth}
	if op != nil {
		ev.key, ev.touch, ev.parent, ev.lazy = op.Key, op.Touch, op.parent, true
	}
	e.record(ev)
	e.depth++
	e.MaxDepth = max(e.MaxDepth, e.depth)
	return op
}

func (e *Explorer) record(ev event) {
	if ev.all {
		e.passed = true
	}
	if ev.key != "" {
		e.opEvent[ev.key] = len(e.events)
	}
	e.events = append(e.events, ev)
}

func (e *Explorer) prevOf(key string) int {
	if i, ok := e.opEvent[key]; ok {
		return i
	}
	return -1
}

// defaultPick continues the causal chain (the lowest key among the ops the
// last event parked), else takes the lowest key; it avoids ops asleep and
// stays within the bound. A run with every op asleep is redundant
// (blocked): it goes on, but adds nothing to the search.
func (e *Explorer) defaultPick(l *level, ready []*Op) string {
	awake := func(k string) bool { _, asleep := l.sleep[k]; return !asleep }
	if e.RandomPick != nil {
		return ready[e.RandomPick(len(ready))].Key
	}
	if e.LowestKey {
		return ready[0].Key
	}
	for _, op := range ready {
		if l.chain[op.Key] && awake(op.Key) {
			return op.Key
		}
	}
	canPreempt := len(l.chain) == 0 || e.Bound < 0 || l.preempt < e.Bound
	if canPreempt {
		for _, op := range ready {
			if awake(op.Key) {
				return op.Key
			}
		}
	}
	if e.blocked < 0 {
		e.blocked = e.depth
		e.Blocked++
	}
	for _, op := range ready {
		if l.chain[op.Key] {
			return op.Key
		}
	}
	return ready[0].Key
}

func findOp(ready, lazy []*Op, key string) *Op {
	for _, op := range ready {
		if op.Key == key {
			return op
		}
	}
	for _, op := range lazy {
		if op.Key == key {
			return op
		}
	}
	return nil
}

func keysOf(ready, lazy []*Op) string {
	var ks []string
	for _, op := range ready {
		ks = append(ks, op.Key)
	}
	for _, op := range lazy {
		ks = append(ks, op.Key+" (lazy)")
	}
	return strings.Join(ks, ", ")
}

// Schedule is this run's choices, one per level, as stable op keys: the
// replay file's lines.
func (e *Explorer) Schedule() []string {
	out := make([]string, 0, len(e.tree))
	for _, l := range e.tree[:min(e.depth, len(e.tree))] {
		out = append(out, l.chosen)
	}
	return out
}

// FormatSchedule writes a schedule as text: a header line, then a choice
// per line (op keys may hold spaces; a NUL tie is written as \0).
func FormatSchedule(s []string) string {
	var b strings.Builder
	b.WriteString("# relaysim schedule v1: one choice per line (op key, key!fault, or @tick)\n")
	for _, c := range s {
		b.WriteString(strings.ReplaceAll(c, "\x00", `\0`))
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseSchedule reads FormatSchedule's text.
func ParseSchedule(text string) ([]string, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# relaysim schedule v1") {
		return nil, fmt.Errorf("not a relaysim schedule (want the header line %q)", "# relaysim schedule v1")
	}
	out := []string{}
	for _, ln := range lines[1:] {
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		out = append(out, strings.ReplaceAll(ln, `\0`, "\x00"))
	}
	return out, nil
}

// Next analyses the run that just ended and prepares the next one; false
// when the search is exhausted (or a replay is done).
func (e *Explorer) Next() bool {
	e.armed = false
	if e.Replay != nil {
		return false
	}
	e.analyse()
	for d := len(e.tree) - 1; d >= 0; d-- {
		l := e.tree[d]
		for _, c := range sortedKeys(l.backtrack) {
			if l.done[c] {
				continue
			}
			if _, asleep := l.sleep[c]; asleep && e.Reduce {
				continue
			}
			e.tree = e.tree[:d+1]
			e.prefix = make([]string, 0, d+1)
			for _, p := range e.tree[:d] {
				e.prefix = append(e.prefix, p.chosen)
			}
			e.prefix = append(e.prefix, c)
			return true
		}
	}
	e.tree = nil
	return false
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// add puts choice c into the backtrack set of level d if the bound and the
// budgets allow it there; it reports whether it did.
func (e *Explorer) add(d int, c string) bool {
	l := e.tree[d]
	if l.backtrack[c] || l.done[c] {
		return true
	}
	if e.DepthBudget > 0 && d >= e.DepthBudget {
		e.DepthHit++
		return false
	}
	if cls := l.classOf(c); cls != "" && l.faults[cls] >= e.Budget[cls] {
		if e.Budget[cls] > 0 {
			e.BudgetHit++ // a class with no budget is off, not cut
		}
		return false
	}
	key, _ := splitChoice(c)
	ci, _ := l.info(key)
	if !ci.lazy && len(l.chain) > 0 && !l.chain[key] && e.Bound >= 0 && l.preempt >= e.Bound {
		e.BoundHit++
		return false
	}
	l.backtrack[c] = true
	return true
}

// analyse finds the races of the run that just ended and adds the choices
// that reverse them, plus the fault alternatives of every release.
func (e *Explorer) analyse() {
	n := len(e.events)
	if e.blocked >= 0 {
		// A redundant run: only what happened before it blocked counts.
		for i, ev := range e.events {
			if ev.level >= e.blocked {
				n = i
				break
			}
		}
	}
	evs := e.events[:n]
	// Faults as choices: at each level, every fault the executed op
	// offers, and every lazy op (a crash) dependent with what ran there.
	for i, ev := range evs {
		if ev.level < 0 {
			continue
		}
		l := e.tree[ev.level]
		key, f := splitChoice(ev.choice)
		if ci, ok := l.info(key); ok && f == "" && !ci.lazy && ev.choice != tick {
			for _, fault := range ci.faults {
				e.add(ev.level, faultChoice(key, fault))
			}
			if ci.delay {
				e.add(ev.level, faultChoice(key, "delay"))
			}
		}
		for _, ci := range l.enabled {
			if ci.lazy && ci.key != key && (!e.Reduce || ev.all || Dependent(ci.touch, evs[i].touch)) {
				e.add(ev.level, ci.key)
			}
		}
		if !e.Reduce {
			for _, ci := range l.enabled {
				if !ci.lazy {
					e.add(ev.level, ci.key)
				}
			}
		}
	}
	if !e.Reduce {
		return
	}
	// An op parked at a level that never runs afterwards was disabled (a
	// crash held it, or the horizon came first): no race with it is ever
	// seen, so the event that may have disabled it is reversed with it
	// here, when they are dependent (persistence does not hold).
	ran := map[string]int{} // op key -> its last level
	for _, ev := range evs {
		if ev.key != "" && ev.level >= 0 {
			ran[ev.key] = ev.level
		}
	}
	for _, ev := range evs {
		if ev.level < 0 || ev.all {
			continue
		}
		l := e.tree[ev.level]
		for _, ci := range l.enabled {
			if ci.lazy || ci.key == ev.key {
				continue
			}
			if last, ok := ran[ci.key]; ok && last > ev.level {
				continue
			}
			if Dependent(ci.touch, ev.touch) {
				e.add(ev.level, ci.key)
			}
		}
	}
	// Happens-before: parent, the same op's earlier event, the last
	// barrier, and every earlier dependent event. reach[j] holds the
	// events before j in happens-before.
	words := (n + 63) / 64
	reach := make([][]uint64, n)
	lastBarrier := -1
	for j := 0; j < n; j++ {
		r := make([]uint64, words)
		join := func(k int) {
			if k < 0 || k >= j {
				return
			}
			r[k/64] |= 1 << (k % 64)
			for w := range reach[k] {
				r[w] |= reach[k][w]
			}
		}
		ev := evs[j]
		join(ev.parent)
		join(ev.prev)
		join(lastBarrier)
		if ev.all {
			for k := 0; k < j; k++ {
				join(k)
			}
			lastBarrier = j
		} else {
			for k := lastBarrier + 1; k < j; k++ {
				if Dependent(evs[k].touch, ev.touch) {
					join(k)
				}
			}
		}
		reach[j] = r
	}
	has := func(set []uint64, k int) bool { return set[k/64]&(1<<(k%64)) != 0 }
	barrierBefore := make([]int, n) // the last barrier before each event
	for j, b := 0, -1; j < n; j++ {
		barrierBefore[j] = b
		if evs[j].all {
			b = j
		}
	}
	for j := 0; j < n; j++ {
		ej := evs[j]
		if ej.all || ej.level < 0 {
			continue
		}
		// The direct predecessors of j other than a candidate i: a race
		// (i, j) is a dependent pair with no other path from i to j.
		var preds []int
		for _, k := range []int{ej.parent, ej.prev} {
			if k >= 0 && k < j {
				preds = append(preds, k)
			}
		}
		for i := j - 1; i > barrierBefore[j]; i-- {
			ei := evs[i]
			if ei.all || ei.level < 0 || !Dependent(ei.touch, ej.touch) {
				continue
			}
			if i == ej.parent || i == ej.prev {
				continue
			}
			covered := false
			for _, k := range preds {
				if has(reach[k], i) {
					covered = true
					break
				}
			}
			if !covered {
				for k := i + 1; k < j; k++ {
					if has(reach[k], i) && has(reach[j], k) {
						covered = true
						break
					}
				}
			}
			if covered {
				continue
			}
			e.reverse(evs, i, j)
		}
	}
}

// reverse adds, at the level of event i, a choice that starts the reversed
// race: j's own op if it was parked there, else the ancestor of j that
// was; failing both, everything parked there (Flanagan–Godefroid).
func (e *Explorer) reverse(evs []event, i, j int) {
	li := evs[i].level
	l := e.tree[li]
	c := ""
	for k := j; k > i; {
		ek := evs[k]
		// The same op instance: parked at li (created before i) by the
		// event that parked ek's op.
		if ci, ok := l.info(ek.key); ok && ci.parent == ek.parent && ek.parent < i {
			c = ek.choice
			if k != j {
				c = ek.key // an ancestor starts plainly
			}
			break
		}
		next := ek.parent
		if ek.prev > next {
			next = ek.prev
		}
		if next <= i {
			break
		}
		k = next
	}
	var cands []string
	if c != "" && e.Bound >= 0 {
		e.addFree(evs, i, j)
	}
	if c != "" {
		cands = []string{c}
	} else {
		for _, ci := range l.enabled {
			if !ci.lazy {
				cands = append(cands, ci.key)
			}
		}
	}
	for _, c := range cands {
		ok := e.add(li, c)
		if e.Bound >= 0 {
			// BPOR: the reversal may need the switch made earlier, where
			// the chain this event continued began (it costs no more
			// there); add it at that switch point too.
			if sw := e.switchPoint(evs, i); sw >= 0 && sw != li {
				key, _ := splitChoice(c)
				if _, parked := e.tree[sw].info(key); parked {
					e.add(sw, c)
				}
			}
		}
		_ = ok
	}
}

// startOf is the choice at the level of event s that starts j's side of
// a reversal: j's own op if that very instance was parked there, else the
// ancestor of j that was ("" when none was).
func (e *Explorer) startOf(evs []event, s, j int) string {
	l := e.tree[evs[s].level]
	for k := j; k > s; {
		ek := evs[k]
		if ci, ok := l.info(ek.key); ok && ci.parent == ek.parent && ek.parent < s {
			if k != j {
				return ek.key // an ancestor starts plainly
			}
			return ek.choice
		}
		next := max(ek.parent, ek.prev)
		if next <= s {
			break
		}
		k = next
	}
	return ""
}

// addFree is BPOR's conservative point, for causal chains: under a bound,
// reversing the race (i, j) at i's level may cost a preemption the bound
// does not allow, while an earlier level offered j's side for free (the
// chain was empty there, or j's side was one of several continuations of
// it). The latest such level before i gets j's side too.
func (e *Explorer) addFree(evs []event, i, j int) {
	for s := i - 1; s >= 0; s-- {
		es := evs[s]
		if es.all {
			return
		}
		if es.level < 0 {
			continue
		}
		c := e.startOf(evs, s, j)
		if c == "" {
			continue
		}
		l := e.tree[es.level]
		key, _ := splitChoice(c)
		if ci, _ := l.info(key); ci.lazy || len(l.chain) == 0 || l.chain[key] {
			if l.chosen != c {
				e.add(es.level, c)
			}
			return
		}
	}
}

// switchPoint is the level of the latest event at or before i that did
// not continue the chain of the event before it.
func (e *Explorer) switchPoint(evs []event, i int) int {
	for k := i; k >= 0; k-- {
		ev := evs[k]
		if ev.level < 0 {
			continue
		}
		if k == 0 || ev.parent != k-1 {
			return ev.level
		}
	}
	return -1
}

// LevelView is one level of the last run, for the commutation check: the
// choice made and the ops parked then, with their footprints.
type LevelView struct {
	Chosen  string
	Keys    []string
	Touches [][]Access
	Lazy    []bool
}

// Levels returns the levels of the run that just ended.
func (e *Explorer) Levels() []LevelView {
	out := make([]LevelView, 0, len(e.tree))
	for _, l := range e.tree[:min(e.depth, len(e.tree))] {
		v := LevelView{Chosen: l.chosen}
		for _, c := range l.enabled {
			v.Keys = append(v.Keys, c.key)
			v.Touches = append(v.Touches, c.touch)
			v.Lazy = append(v.Lazy, c.lazy)
		}
		out = append(out, v)
	}
	return out
}

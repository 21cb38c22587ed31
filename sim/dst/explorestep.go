// The search's choices during a run (explore.go describes the search):
// arming and disarming it, the step the scheduler delegates to it at a
// quiet point, the choice made at each level (a replayed prefix, else the
// default pick) and the events it records.

package dst

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Arm starts the choices of one run (the story's concurrent steps begin).
func (e *Explorer) Arm(s *Scheduler) {
	e.armed = true
	e.depth, e.events, e.blocked, e.ticked = 0, e.events[:0], -1, false
	e.opEvent = map[uint64]int{}
	if e.Replay != nil && e.Schedules == 0 {
		e.prefix = e.Replay
	}
	if e.Sample != nil && e.Replay == nil {
		// Each sampled run draws its own choices: no tree carries over.
		e.tree, e.prefix = e.tree[:0], nil
		e.Sample.begin(e.Budget)
	}
	e.Schedules++
	s.lock <- struct{}{}
	s.cur = -1
	if e.Budget[TimerClass] > 0 {
		s.parkTimer()
	}
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
	s.unparkTimer() // a timer at the horizon is the liveness phase's
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
	if s.timerOp != nil && (len(ready) == 0 || now >= s.until) {
		// The clock's timer is offered only with work ready, and before
		// the horizon: where nothing is ready time runs on anyway.
		lazy = s.withoutTimer(lazy)
	}
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
		if isTimer(op) {
			// A timer fired early: nothing is released, time runs on
			// until the next timer of the bubble parks something (drive's
			// wait), and drive says how far (OnTimer).
			s.timerFrom = now
			return false
		}
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

// fire releases a lazy op with "fire". The clock's timer has no
// goroutine behind it: it is parked again (the budget says how often it
// may fire), and drive lets time run on.
func (e *Explorer) fire(s *Scheduler, op *Op) {
	s.lock <- struct{}{}
	s.cur = len(e.events) - 1
	op.fault = "fire"
	s.unpark(op)
	if op == s.timerOp {
		s.timerOp = nil
		s.parkTimer()
	}
	<-s.lock
	s.Steps++
	s.trace.Event(s.Now(), op.Node, "explore: fire %s %s", op.Kind, op.ID)
	close(op.release)
	e.ticked = false
}

// choose picks the op to run at a quiet point with something ready.
func (e *Explorer) choose(ready, lazy []*Op) (*Op, string) {
	var l *level
	if e.depth < len(e.tree) {
		l = e.tree[e.depth]
		l.refresh(ready, lazy)
	} else {
		l = e.newLevel(ready, lazy)
		e.tree = append(e.tree, l)
	}
	c := ""
	switch {
	case e.depth < len(e.prefix):
		c = e.prefix[e.depth]
	case e.Sample != nil:
		c = e.Sample.pick(l, ready, lazy, e.Budget)
	default:
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
	e.record(event{choice: c, key: key, inst: op.arrival, touch: l.touchOf(c), parent: op.parent, prev: e.prevOf(op.arrival), level: e.depth, preempt: preempt, lazy: op.Lazy, timer: isTimer(op)})
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
		l.refresh(nil, lazy)
	} else {
		l = e.newLevel(nil, lazy)
		e.tree = append(e.tree, l)
	}
	c := tick
	switch {
	case e.depth < len(e.prefix):
		c = e.prefix[e.depth]
	case e.Sample != nil:
		c = e.Sample.barrier(l, lazy, e.Budget)
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
		ev.key, ev.inst, ev.touch, ev.parent, ev.lazy = op.Key, op.arrival, op.Touch, op.parent, true
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
	if ev.inst != 0 {
		e.opEvent[ev.inst] = len(e.events)
	}
	e.events = append(e.events, ev)
}

// prevOf is the latest event of op instance inst, or -1.
func (e *Explorer) prevOf(inst uint64) int {
	if i, ok := e.opEvent[inst]; ok {
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
	for _, op := range ready {
		if awake(op.Key) {
			if canPreempt {
				return op.Key
			}
			e.BoundHeld++ // the bound kept this run off an awake op
			break
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

// refresh renumbers a level built by an earlier run with this run's op
// instances (an instance number is only meaningful within its run): the
// ops parked here are the same, by key, but their Op.arrival may differ.
func (l *level) refresh(ready, lazy []*Op) {
	for i, ci := range l.enabled {
		if op := findOp(ready, lazy, ci.key); op != nil {
			l.enabled[i].inst = op.arrival
		} else {
			l.enabled[i].inst = 0 // not parked this time (a divergence)
		}
	}
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

// isTimer says whether op is the clock's lazy op (TimerClass).
func isTimer(op *Op) bool { return op.Lazy && op.Node == timerNode && op.Class == TimerClass }

// parkTimer parks the clock's lazy op (TimerKey): no goroutine waits on
// it; firing it lets virtual time run on. Called with s.lock held.
func (s *Scheduler) parkTimer() {
	op := &Op{Key: TimerKey, Node: timerNode, Kind: TimerClass, ID: "next", Lazy: true, Class: TimerClass,
		parent: s.cur, release: make(chan struct{})}
	s.arrived++
	op.arrival = s.arrived
	s.parked[op.Key] = op
	i := sort.Search(len(s.sorted), func(i int) bool { return s.sorted[i].Key >= op.Key })
	s.sorted = slices.Insert(s.sorted, i, op)
	s.timerOp = op
}

// unparkTimer takes the clock's lazy op away (the horizon). Called with
// s.lock held.
func (s *Scheduler) unparkTimer() {
	if s.timerOp != nil {
		s.unpark(s.timerOp)
		s.timerOp = nil
	}
}

// withoutTimer is lazy without the clock's op (a buffer of its own).
func (s *Scheduler) withoutTimer(lazy []*Op) []*Op {
	out := s.lazyNoTimer[:0]
	for _, op := range lazy {
		if op != s.timerOp {
			out = append(out, op)
		}
	}
	s.lazyNoTimer = out
	return out
}

package dst

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing/synctest"
	"time"
)

// Op is an operation parked at a gate, waiting for the scheduler.
type Op struct {
	// Key is "node|kind|logical-op-id": stable across runs, unique among the
	// operations parked at the same time.
	Key  string
	Node string
	Kind string
	ID   string
	// ReadyAt is the virtual time from which the op may be released (its
	// latency, any fault delay, a node pause).
	ReadyAt time.Duration
	// Units sizes the op for the resource model (the harness says what: a
	// message's recipients, a command's keys); 0 means 1. It is not part
	// of the key or the trace.
	Units int
	// Touch, Faults, FaultDelay, Lazy and Class come from the GateSpec:
	// what the explorer needs to know of the op (explore.go).
	Touch      []Access
	Faults     []string
	FaultDelay time.Duration
	Lazy       bool
	Class      string
	// parent is the explorer's event after whose release the op parked
	// (-1: before exploring began); fault is what the explorer chose for
	// it ("" none), handed back by Gate.
	parent int
	fault  string
	// owner is who the op belongs to (GateSpec.Owner): Hold stops every op
	// of an owner.
	owner   any
	arrival uint64
	alias   string // GateSpec.Alias
	delayed bool
	booked  bool // the resource model booked a resource until ReadyAt
	release chan struct{}
}

// Scheduler is the driver side of "quiesce and pick". Gated goroutines call
// Gate and block; only the driver (the bubble's root goroutine) calls Run*
// and releases them one at a time.
type Scheduler struct {
	start  time.Time
	lock   chan struct{} // 1-slot lock: gated goroutines may block on it
	parked map[string]*Op
	// sorted holds the parked ops in key order (insertion by binary
	// search), so that ready need not sort every step; readyBuf is ready's
	// reused result.
	sorted   []*Op
	readyBuf []*Op
	wake     chan struct{}
	pass     bool
	strategy Strategy
	latency  func(node, kind, id string) time.Duration
	trace    *Trace
	pausedTo map[string]time.Duration
	// held are the ops of held owners (crashed incarnations): never picked,
	// released only by PassThrough at teardown.
	held      []*Op
	heldOwner map[any]bool
	// Collisions lists keys that were parked twice at once: a harness bug.
	Collisions []string
	// Steps counts released operations.
	Steps   int
	Delays  int
	arrived uint64
	// ByArrival and Ungated are negative controls for the determinism check:
	// ops ordered by arrival instead of key, or gates switched off.
	ByArrival bool
	Ungated   bool
	// Resources, when set, makes ops cost time on contended resources
	// (resources.go).
	Resources *Resources
	// OnRelease, when set, is told of each released op (driver side, in
	// release order): the experiments time fan-outs with it.
	OnRelease func(op *Op, now time.Duration)
	// OnTimer, when set, is told when virtual time ran on from from to to
	// because the explorer fired a timer early (TimerClass) while work was
	// in flight: every op parked then was held that long.
	OnTimer func(from, to time.Duration)
	// Explorer, when set and armed, makes every choice instead of the
	// strategy (explorestep.go); cur is the index of its latest event, which
	// ops that park now record as their parent.
	Explorer *Explorer
	cur      int
	lazyBuf  []*Op
	// timerOp is the clock's lazy op while the explorer offers timers
	// (TimerClass); lazyNoTimer the lazy ops without it; until the end
	// of the drive under way (no timer is offered from then on).
	timerOp     *Op
	lazyNoTimer []*Op
	until       time.Duration
	// timerFrom is when the explorer fired a timer early (-1: none since
	// drive last looked).
	timerFrom time.Duration
}

// NewScheduler returns a scheduler whose clock starts now (inside the bubble).
func NewScheduler(s Strategy, trace *Trace, latency func(node, kind, id string) time.Duration) *Scheduler {
	return &Scheduler{
		start: time.Now(), lock: make(chan struct{}, 1), parked: map[string]*Op{},
		wake: make(chan struct{}, 1), strategy: s, latency: latency, trace: trace,
		pausedTo: map[string]time.Duration{}, heldOwner: map[any]bool{}, cur: -1, timerFrom: -1,
	}
}

// Now is the virtual time since the run started.
func (s *Scheduler) Now() time.Duration { return time.Since(s.start) }

// Origin is the bubble's clock reading at virtual time 0.
func (s *Scheduler) Origin() time.Time { return s.start }

// GateSpec is one operation arriving at a gate: who it is (Node, Kind,
// ID: its trace line and key "node|kind|id"), what it belongs to, and what
// it adds to the op's drawn latency.
type GateSpec struct {
	// Owner is who the op belongs to (a node incarnation; nil for ops of no
	// one): once the owner is held (Hold), its ops park in the held set
	// until teardown.
	Owner          any
	Node, Kind, ID string
	// Tie, for an op whose id two calls in flight at once may share (the
	// same client request made twice, a duplicated relay), is the call's
	// own identity: it makes the key unique without entering the trace.
	// It follows a NUL byte, which sorts below every character an id
	// holds, so keys that differed before keep their order and only equal
	// ones are ordered by their ties.
	Tie string
	// Alias, for an op whose id may be shared by another op only when the
	// system under test reuses an identity it should not (two messages
	// given one seq after Redis lost writes), is the op's own identity:
	// when two ops with aliases that differ park under one key at once,
	// both are renamed key, NUL, alias (in whichever order they arrived),
	// and it is not a collision. Unlike Tie it changes no key of a run
	// without that reuse.
	Alias string
	// Extra delays the op beyond its latency (a fault).
	Extra time.Duration
	// Units sizes the op for the resource model (see Op.Units).
	Units int
	// Touch is the op's footprint for the explorer (nil: unknown, it
	// touches everything). Faults lists the faults the harness can carry
	// out at this op ("drop", "error", ...): the explorer may choose one,
	// and Gate returns it. FaultDelay > 0 offers "delay": the op is held
	// that long past its gate (past a timeout that matters). Ignored
	// unless an explorer is set.
	Touch      []Access
	Faults     []string
	FaultDelay time.Duration
	// Lazy marks an op that never runs on its own: only the explorer fires
	// it, as a fault of class Class (a crash), and Gate returns "fire";
	// teardown releases it with "". Lazy ops never make the scheduler
	// busy: time runs on while only they are parked.
	Lazy  bool
	Class string
}

// Gate parks the calling goroutine until the driver releases it. The op's
// latency (and g.Extra) is applied before it can be picked. It returns the
// fault the explorer chose for the op ("" for none: always "" outside
// exploration).
func (s *Scheduler) Gate(g GateSpec) string {
	if s.Ungated {
		return ""
	}
	s.lock <- struct{}{}
	if s.pass {
		<-s.lock
		return ""
	}
	key := g.Node + "|" + g.Kind + "|" + g.ID
	if g.Tie != "" {
		key += "\x00" + g.Tie
	}
	op := &Op{Key: key, Node: g.Node, Kind: g.Kind, ID: g.ID, Units: g.Units, owner: g.Owner, release: make(chan struct{}),
		Touch: g.Touch, Faults: g.Faults, FaultDelay: g.FaultDelay, Lazy: g.Lazy, Class: g.Class, parent: s.cur}
	if g.Owner != nil && s.heldOwner[g.Owner] {
		s.held = append(s.held, op)
		<-s.lock
		<-op.release
		return ""
	}
	op.ReadyAt = s.Now() + g.Extra
	if s.latency != nil {
		op.ReadyAt += s.latency(g.Node, g.Kind, g.ID)
	}
	op.alias = g.Alias
	if old, dup := s.parked[key]; dup {
		if old.alias != "" && op.alias != "" && old.alias != op.alias {
			s.rekey(old, key+"\x00"+old.alias)
			op.Key = key + "\x00" + op.alias
		} else {
			s.Collisions = append(s.Collisions, key)
			op.Key = fmt.Sprintf("%s#collision%d", key, len(s.Collisions))
		}
	}
	s.arrived++
	op.arrival = s.arrived
	s.parked[op.Key] = op
	i := sort.Search(len(s.sorted), func(i int) bool { return s.sorted[i].Key >= op.Key })
	s.sorted = append(s.sorted, nil)
	copy(s.sorted[i+1:], s.sorted[i:])
	s.sorted[i] = op
	<-s.lock
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-op.release
	return op.fault
}

// rekey moves a parked op to another key, keeping the order of s.sorted.
// Called with s.lock held.
func (s *Scheduler) rekey(op *Op, key string) {
	delete(s.parked, op.Key)
	if i := slices.Index(s.sorted, op); i >= 0 {
		s.sorted = slices.Delete(s.sorted, i, i+1)
	}
	op.Key = key
	s.parked[key] = op
	i := sort.Search(len(s.sorted), func(i int) bool { return s.sorted[i].Key >= key })
	s.sorted = slices.Insert(s.sorted, i, op)
}

// Hold stops owner for good, as a crash stops a process: its parked ops
// move to the held set and its later gates park there. Held ops are never
// picked; only PassThrough (teardown) releases them, so nothing the owner
// does after Hold passes a gate while the run is scheduled.
func (s *Scheduler) Hold(owner any) {
	if owner == nil {
		return
	}
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	s.heldOwner[owner] = true
	kept := s.sorted[:0]
	for _, op := range s.sorted {
		if op.owner == owner {
			delete(s.parked, op.Key)
			s.held = append(s.held, op)
			continue
		}
		kept = append(kept, op)
	}
	clear(s.sorted[len(kept):])
	s.sorted = kept
}

// Held counts the ops parked in the held set.
func (s *Scheduler) Held() int {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	return len(s.held)
}

// Pause holds every op of node until virtual time until.
func (s *Scheduler) Pause(node string, until time.Duration) {
	s.lock <- struct{}{}
	s.pausedTo[node] = until
	<-s.lock
}

// UnpauseAll lifts every pause at once (the liveness phase: faults stop).
func (s *Scheduler) UnpauseAll() {
	s.lock <- struct{}{}
	s.pausedTo = map[string]time.Duration{}
	<-s.lock
}

// RunUntil drives the bubble until virtual time t: it releases ready ops one
// by one and lets time advance when none is ready.
func (s *Scheduler) RunUntil(t time.Duration) { s.drive(nil, t) }

// RunFor drives the bubble for d of virtual time.
func (s *Scheduler) RunFor(d time.Duration) { s.RunUntil(s.Now() + d) }

// ready returns the ops that may run now, sorted by key (or arrival for the
// negative control), and the earliest future ReadyAt (-1: none). The slice
// is reused by the next call: callers (step, Strategy.Pick) must not keep it.
func (s *Scheduler) ready(now time.Duration) ([]*Op, time.Duration) {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	next := time.Duration(-1)
	out := s.readyBuf[:0]
	s.lazyBuf = s.lazyBuf[:0]
	for _, op := range s.sorted { // already in key order: no sort per step
		if op.Lazy {
			s.lazyBuf = append(s.lazyBuf, op) // never ready on its own
			continue
		}
		at := op.ReadyAt
		if len(s.pausedTo) > 0 {
			at = max(at, s.pausedTo[op.Node])
		}
		if at <= now {
			out = append(out, op)
		} else if next < 0 || at < next {
			next = at
		}
	}
	if s.ByArrival {
		sort.Slice(out, func(i, j int) bool { return out[i].arrival < out[j].arrival })
	}
	s.readyBuf = out
	return out, next
}

// step lets the strategy pick one ready op and either releases it or delays it.
func (s *Scheduler) step(ready []*Op, now time.Duration) {
	i, delay := s.strategy.Pick(ready, now)
	op := ready[i]
	if s.Resources != nil && s.Resources.book(s, op, now) {
		return // re-parked until its booked work is done (resources.go)
	}
	if delay > 0 && !op.delayed && s.Resources == nil {
		s.lock <- struct{}{}
		op.ReadyAt, op.delayed = now+delay, true
		<-s.lock
		s.Delays++
		return
	}
	s.lock <- struct{}{}
	s.unpark(op)
	<-s.lock
	s.Steps++
	s.trace.Op(now, op.Node, op.Kind, op.ID) // = Event(now, op.Node, "%s %s", op.Kind, op.ID), without fmt
	if s.OnRelease != nil {
		s.OnRelease(op, now)
	}
	close(op.release)
}

// unpark takes a picked op out of the parked set; the caller holds lock.
func (s *Scheduler) unpark(op *Op) {
	delete(s.parked, op.Key)
	j := sort.Search(len(s.sorted), func(j int) bool { return s.sorted[j].Key >= op.Key })
	s.sorted = append(s.sorted[:j], s.sorted[j+1:]...) // keys are unique: s.sorted[j] == op
}

// PassThrough releases everything parked or held and lets later gates
// pass unblocked: teardown must not depend on the driver.
func (s *Scheduler) PassThrough() {
	s.lock <- struct{}{}
	s.pass = true
	ops := make([]*Op, 0, len(s.parked)+len(s.held))
	for _, op := range s.parked {
		ops = append(ops, op)
	}
	ops = append(ops, s.held...)
	s.parked = map[string]*Op{}
	s.sorted = nil
	s.held = nil
	<-s.lock
	for _, op := range ops {
		close(op.release)
	}
}

// ParkedKinds counts parked ops of node whose kind is one of kinds.
func (s *Scheduler) ParkedKinds(node string, kinds ...string) int {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	n := 0
	for _, op := range s.parked {
		for _, k := range kinds {
			if op.Node == node && op.Kind == k {
				n++
			}
		}
	}
	return n
}

// Await drives the bubble until done is closed or limit of virtual time has
// passed; it reports whether done was closed.
func (s *Scheduler) Await(done <-chan struct{}, limit time.Duration) bool {
	return s.drive(done, s.Now()+limit)
}

// drive is the driver loop: wait for quiescence, release one ready op (or
// let the strategy delay it), and when none is ready let virtual time run
// to the next ready op, the end, or done (nil: never) closing.
func (s *Scheduler) drive(done <-chan struct{}, end time.Duration) bool {
	s.until = end
	for {
		select {
		case <-done:
			return true
		default:
		}
		synctest.Wait()
		select {
		case <-done:
			return true
		default:
		}
		select {
		case <-s.wake:
		default:
		}
		now := s.Now()
		if s.timerFrom >= 0 {
			// Time ran on from a timer fired early (exploreStep): say how far.
			if s.OnTimer != nil {
				s.OnTimer(s.timerFrom, now)
			}
			s.timerFrom = -1
		}
		ready, next := s.ready(now)
		if e := s.Explorer; e != nil && e.armed {
			if s.exploreStep(ready, s.lazyBuf, now) {
				continue
			}
		} else if len(ready) > 0 {
			s.step(ready, now)
			continue
		}
		if now >= end {
			return false
		}
		wait := end - now
		if next >= 0 && next-now < wait {
			wait = next - now
		}
		timer := time.NewTimer(wait)
		select {
		case <-s.wake:
		case <-done:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Pending counts the ops parked and not held that are not lazy: work
// the driver would still release (ready now or later: a delay, a pause).
func (s *Scheduler) Pending() int {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	n := 0
	for _, op := range s.sorted {
		if !op.Lazy {
			n++
		}
	}
	return n
}

// ParkedPrefix counts parked ops of node of kind whose id starts with prefix.
func (s *Scheduler) ParkedPrefix(node, kind, prefix string) int {
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	n := 0
	for _, op := range s.parked {
		if op.Node == node && op.Kind == kind && strings.HasPrefix(op.ID, prefix) {
			n++
		}
	}
	return n
}

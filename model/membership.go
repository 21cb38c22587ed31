package model

import (
	"fmt"
	"slices"
	"sort"
)

// Membership is one user's membership of one room, derived from the join
// and leave acks the user's client received. Owed windows certainly held
// the user; Maybe windows possibly did (a join or leave whose outcome the
// client never learnt: it timed out, or the run ended first).
type Membership struct {
	Owed  []Window
	Maybe []Window
}

// owes reports whether seq is certainly inside a window.
func (m *Membership) owes(seq uint64) bool { return m != nil && inWindows(m.Owed, seq) }

// allows reports whether seq may be inside a window.
func (m *Membership) allows(seq uint64) bool {
	return m != nil && (inWindows(m.Owed, seq) || inWindows(m.Maybe, seq))
}

func inWindows(ws []Window, seq uint64) bool {
	for _, w := range ws {
		if w.Contains(seq) {
			return true
		}
	}
	return false
}

type userRoom struct{ user, room string }

// definite lists the gRPC codes of a call that certainly changed nothing
// (the node rejected it before acting). Any other error leaves the outcome
// unknown: the call may have taken effect before its response was lost.
var definite = map[string]bool{
	"InvalidArgument": true, "NotFound": true, "FailedPrecondition": true,
	"Unauthenticated": true, "PermissionDenied": true, "AlreadyExists": true, "OutOfRange": true,
}

// roomSends indexes a room's acknowledged sends for real-time questions.
// It points into the history's events rather than copying them: a dense
// run has a send per message, and three copies of each were the largest
// thing the checks held.
type roomSends struct {
	byDone []*Event // OK sends by completion
	maxSeq []uint64 // maxSeq[i]: highest seq among byDone[:i+1]
	maxAt  []*Event // the send holding maxSeq[i]
	all    []*Event // OK sends in history order
}

func indexSends(events []Event) map[string]*roomSends {
	out := map[string]*roomSends{}
	for i := range events {
		ev := &events[i]
		if ev.Kind != KindSend || !ev.OK || ev.Seq == 0 {
			continue
		}
		rs := out[ev.Room]
		if rs == nil {
			rs = &roomSends{}
			out[ev.Room] = rs
		}
		rs.all = append(rs.all, ev)
	}
	for _, rs := range out {
		rs.byDone = slices.Clone(rs.all)
		sort.SliceStable(rs.byDone, func(i, j int) bool { return rs.byDone[i].done().before(rs.byDone[j].done()) })
		for i, ev := range rs.byDone {
			best, at := ev.Seq, ev
			if i > 0 && rs.maxSeq[i-1] >= best {
				best, at = rs.maxSeq[i-1], rs.maxAt[i-1]
			}
			rs.maxSeq = append(rs.maxSeq, best)
			rs.maxAt = append(rs.maxAt, at)
		}
	}
	return out
}

// ackedBefore returns the highest seq acked before instant at, and its send.
func (rs *roomSends) ackedBefore(at instant) (uint64, Event, bool) {
	if rs == nil {
		return 0, Event{}, false
	}
	i := sort.Search(len(rs.byDone), func(i int) bool { return !rs.byDone[i].done().before(at) })
	if i == 0 {
		return 0, Event{}, false
	}
	return rs.maxSeq[i-1], *rs.maxAt[i-1], true
}

// memberTracker follows one user's membership of one room through its
// joins and leaves, in invocation order.
type memberTracker struct {
	sends *roomSends
	m     Membership
	state int // out, in or unknown
	from  uint64
	join  Event   // the join that opened the current window
	since instant // the earliest invocation that may have opened it
	lo    uint64  // unknown: the lowest seq possibly inside a window
	out   []Violation
}

const (
	stOut = iota
	stIn
	stUnknown
)

func (t *memberTracker) lowest(at instant) uint64 {
	s, _, _ := t.sends.ackedBefore(at)
	return s + 1
}

func (t *memberTracker) onJoin(ev Event) {
	switch {
	case !ev.OK && definite[ev.Err]:
	case !ev.OK:
		if t.state == stOut {
			t.state, t.lo, t.since = stUnknown, t.lowest(ev.inv()), ev.inv()
		}
	case t.state == stIn:
		if ev.Seq != t.from {
			t.violate(ev, fmt.Sprintf("join acked from_seq %d while the window opened at seq %d is open", ev.Seq, t.from), t.join.TraceLine)
		}
	case t.state == stUnknown:
		// An earlier join may have opened the window this ack names.
		if ev.Seq > t.lo {
			t.m.Maybe = append(t.m.Maybe, Window{From: t.lo, To: ev.Seq - 1})
		}
		t.open(ev, t.since)
	default:
		t.open(ev, ev.inv())
	}
}

func (t *memberTracker) open(ev Event, since instant) {
	t.state, t.from, t.join, t.since = stIn, ev.Seq, ev, since
	t.checkJoin(ev, since)
}

func (t *memberTracker) onLeave(ev Event) {
	switch {
	case !ev.OK && ev.Err == "FailedPrecondition" && t.state == stIn:
		t.violate(ev, fmt.Sprintf("leave answered %s (not a member) while the window opened at seq %d is open", ev.Err, t.from), t.join.TraceLine)
	case !ev.OK && definite[ev.Err]:
	case !ev.OK:
		if t.state == stIn {
			// Certainly a member for everything acked before the leave.
			lo := t.lowest(ev.inv())
			if lo > t.from {
				t.m.Owed = append(t.m.Owed, Window{From: t.from, To: lo - 1})
			}
			t.state, t.lo = stUnknown, max(lo, t.from)
		}
	case t.state == stIn:
		t.checkLeave(ev)
		if ev.Seq >= t.from {
			t.m.Owed = append(t.m.Owed, Window{From: t.from, To: ev.Seq})
		}
		t.state = stOut
	case t.state == stUnknown:
		if ev.Seq >= t.lo {
			t.m.Maybe = append(t.m.Maybe, Window{From: t.lo, To: ev.Seq})
		}
		t.state = stOut
	}
}

func (t *memberTracker) finish() Membership {
	switch t.state {
	case stIn:
		t.m.Owed = append(t.m.Owed, Window{From: t.from})
	case stUnknown:
		t.m.Maybe = append(t.m.Maybe, Window{From: t.lo})
	}
	return t.m
}

// checkJoin: a window must not start at or before a seq acked before the
// join was invoked, and must hold every send invoked after it completed.
func (t *memberTracker) checkJoin(ev Event, since instant) {
	if s, send, ok := t.sends.ackedBefore(since); ok && s >= ev.Seq {
		t.violate(ev, fmt.Sprintf("the window opens at seq %d, but seq %d (%q) was acked at t=%v, before the join was invoked at t=%v",
			ev.Seq, s, send.MsgID, send.Time, since.t), send.TraceLine)
	}
	if t.sends == nil {
		return
	}
	for _, s := range t.sends.all {
		// A duplicate's ack names the seq of its first sending, which may
		// precede the join (a user sending its own id again later).
		if ev.done().before(s.inv()) && s.Seq < ev.Seq && !s.Duplicate {
			t.violate(ev, fmt.Sprintf("the window opens at seq %d, but %q, sent after the join completed, was acked with seq %d",
				ev.Seq, s.MsgID, s.Seq), s.TraceLine)
			return
		}
	}
}

// checkLeave: the window must hold every send invoked after the join
// completed and acked before the leave was invoked, and nothing invoked
// after the leave completed.
func (t *memberTracker) checkLeave(ev Event) {
	if t.sends == nil {
		return
	}
	for _, s := range t.sends.all {
		switch {
		case t.join.done().before(s.inv()) && s.done().before(ev.inv()) && s.Seq > ev.Seq:
			t.violate(ev, fmt.Sprintf("the window closes at seq %d, but %q, acked with seq %d before the leave was invoked, falls after it",
				ev.Seq, s.MsgID, s.Seq), s.TraceLine)
			return
		case ev.done().before(s.inv()) && s.Seq <= ev.Seq && !s.Duplicate:
			t.violate(ev, fmt.Sprintf("the window closes at seq %d, but %q, sent after the leave completed, was acked with seq %d",
				ev.Seq, s.MsgID, s.Seq), s.TraceLine)
			return
		}
	}
}

func (t *memberTracker) violate(ev Event, detail string, evidence ...int) {
	t.out = append(t.out, Violation{
		Property: PropWindows, User: ev.User, Room: ev.Room, Seq: ev.Seq, Detail: detail,
		TraceLines: lines(append(evidence, ev.TraceLine)...),
	})
}

// Memberships derives every user's membership of every room from the join
// and leave acks, and checks each window edge against real-time order.
func Memberships(h *History) (map[string]map[string]*Membership, []Violation) {
	sends := indexSends(h.Events)
	trackers := map[userRoom]*memberTracker{}
	var order []userRoom
	for _, ev := range h.Events {
		if ev.Kind != KindJoin && ev.Kind != KindLeave {
			continue
		}
		k := userRoom{ev.User, ev.Room}
		if trackers[k] == nil {
			trackers[k] = &memberTracker{sends: sends[ev.Room]}
			order = append(order, k)
		}
	}
	// A user's calls are sequential, so completion order is invocation order.
	for _, ev := range h.Events {
		switch ev.Kind {
		case KindJoin:
			trackers[userRoom{ev.User, ev.Room}].onJoin(ev)
		case KindLeave:
			trackers[userRoom{ev.User, ev.Room}].onLeave(ev)
		}
	}
	out := map[string]map[string]*Membership{}
	var vs []Violation
	for _, k := range order {
		t := trackers[k]
		m := t.finish()
		if out[k.room] == nil {
			out[k.room] = map[string]*Membership{}
		}
		out[k.room][k.user] = &m
		vs = append(vs, t.out...)
	}
	return out, vs
}

// CheckWindows reports every membership window that contradicts the
// real-time order of the clients' calls (see Memberships).
func CheckWindows(h *History) []Violation {
	_, vs := Memberships(h)
	return vs
}

package model

import (
	"fmt"
	"sort"
)

// orderState follows one user's deliveries of one room.
type orderState struct {
	logSeqs  []uint64    // the room's log seqs, ascending (shared)
	m        *Membership // which of them the user is certainly owed
	seen     seqSet
	last     uint64 // highest seq delivered so far (0: none)
	lastLine int    // trace line of that delivery
}

// CheckOrdering checks that each user's deliveries of a room, in history
// order, are strictly increasing and skip no seq the user is certainly owed.
// A delivery that skips an owed seq is a gap; a delivery below the highest
// seq delivered so far is out of order (so a gap filled later shows as one
// gap plus one out-of-order delivery). Strays and duplicates are left to
// their own checkers.
func CheckOrdering(h *History) []Violation { return newJudge(h).ordering() }

func (j *judge) ordering() []Violation {
	states := map[userRoom]*orderState{}
	var out []Violation
	j.h.EachDelivery(func(ev Event) {
		if j.strayReason(ev) != "" {
			return
		}
		k := userRoom{ev.User, ev.Room}
		st := states[k]
		if st == nil {
			st = &orderState{logSeqs: j.logSeqs(ev.Room), m: j.membership(ev.Room, ev.User)}
			states[k] = st
		}
		if !st.seen.add(ev.Seq) {
			return // duplicate: CheckExactlyOnce reports it
		}
		if detail, prevLine := st.advance(ev); detail != "" {
			out = append(out, Violation{
				Property: PropOrdering, User: ev.User, Room: ev.Room, Seq: ev.Seq,
				Detail: detail, TraceLines: lines(prevLine, ev.TraceLine),
			})
		}
	})
	return out
}

// advance records a first delivery of ev.Seq and returns what is wrong with
// it ("" when nothing) and the trace line of the delivery it is judged
// against.
func (st *orderState) advance(ev Event) (detail string, prevLine int) {
	prev, prevLine := st.last, st.lastLine
	if ev.Seq < prev {
		return fmt.Sprintf("delivered seq %d after seq %d", ev.Seq, prev), prevLine
	}
	// Only a delivery above the highest so far moves it, so a late gap fill
	// does not make the deliveries after it look like gaps again.
	st.last, st.lastLine = ev.Seq, ev.TraceLine
	skipped := st.owedBetween(prev, ev.Seq)
	switch {
	case len(skipped) == 0:
		return "", 0
	case prev == 0:
		return fmt.Sprintf("first delivery is seq %d, skipping owed seq(s) %s", ev.Seq, few(skipped)), 0
	}
	return fmt.Sprintf("delivered seq %d after seq %d, skipping owed seq(s) %s", ev.Seq, prev, few(skipped)), prevLine
}

// owedBetween returns the owed seqs (in the log and certainly inside the
// user's windows) strictly between lo and hi.
func (st *orderState) owedBetween(lo, hi uint64) []uint64 {
	i := sort.Search(len(st.logSeqs), func(i int) bool { return st.logSeqs[i] > lo })
	var out []uint64
	for ; i < len(st.logSeqs) && st.logSeqs[i] < hi; i++ {
		if st.m.owes(st.logSeqs[i]) {
			out = append(out, st.logSeqs[i])
		}
	}
	return out
}

package model

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// judge is what the delivery checkers share: the room logs indexed by seq
// and the memberships derived from the acks.
type judge struct {
	h       *History
	logs    logIndex
	members map[string]map[string]*Membership
	byMsg   map[string]Fault    // per-operation faults by message, built on demand
	seqs    map[string][]uint64 // each room's log seqs, sorted (logSeqs)
	users   map[string][]string // each room's members, sorted (roomUsers)
	// connectsTo holds, per node, when each user first tried to connect
	// to it (refused.go), built on demand.
	connectsTo map[string]map[string]time.Duration
	items      *linkQueue // the stream items by link (linkqueue.go), built on demand
}

func newJudge(h *History) *judge {
	m, _ := Memberships(h)
	return &judge{h: h, logs: indexLogs(h.Final), members: m}
}

func (j *judge) membership(room, user string) *Membership { return j.members[room][user] }

// roomUsers returns the users with a membership of room, sorted; the
// checks that look at every member of a message's room ask once a send.
func (j *judge) roomUsers(room string) []string {
	if us, ok := j.users[room]; ok {
		return us
	}
	if j.users == nil {
		j.users = map[string][]string{}
	}
	us := sortedKeys(j.members[room])
	j.users[room] = us
	return us
}

// expected returns the seqs of room's final log that user is certainly
// owed, ascending (what ordering's owedBetween picks from).
func (j *judge) expected(room, user string) []uint64 {
	m := j.membership(room, user)
	var out []uint64
	for _, seq := range j.logSeqs(room) {
		if m.owes(seq) {
			out = append(out, seq)
		}
	}
	return out
}

// logSeqs returns the seqs of room's final log, ascending and unique,
// computed once per room (shared by every user of the room).
func (j *judge) logSeqs(room string) []uint64 {
	if seqs, ok := j.seqs[room]; ok {
		return seqs
	}
	var out []uint64
	for _, e := range j.h.Final.Logs[room] {
		out = append(out, e.Seq)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if j.seqs == nil {
		j.seqs = map[string][]uint64{}
	}
	j.seqs[room] = out
	return out
}

func formatWindows(ws []Window) string {
	if len(ws) == 0 {
		return "(none)"
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		to := "open"
		if w.To != 0 {
			to = fmt.Sprint(w.To)
		}
		parts[i] = fmt.Sprintf("[%d,%s]", w.From, to)
	}
	return strings.Join(parts, " ")
}

func formatMembership(m *Membership) string {
	if m == nil {
		return "(none)"
	}
	s := formatWindows(m.Owed)
	if len(m.Maybe) > 0 {
		s += " maybe " + formatWindows(m.Maybe)
	}
	return s
}

// logIndex maps room, then seq, to the final log entry, so that checkers
// look deliveries up by seq instead of trusting slice positions.
type logIndex map[string]map[uint64]LogEntry

func indexLogs(f Final) logIndex {
	x := logIndex{}
	for room, entries := range f.Logs {
		m := make(map[uint64]LogEntry, len(entries))
		for _, e := range entries {
			m[e.Seq] = e
		}
		x[room] = m
	}
	return x
}

func (x logIndex) entry(room string, seq uint64) (LogEntry, bool) {
	e, ok := x[room][seq]
	return e, ok
}

// owed reports whether a delivery's (room, seq) is one its user is
// certainly owed.
func (j *judge) owed(ev Event) bool {
	_, ok := j.logs.entry(ev.Room, ev.Seq)
	return ok && j.membership(ev.Room, ev.User).owes(ev.Seq)
}

// strayReason says why a delivery is a stray, or "" when it is not.
func (j *judge) strayReason(ev Event) string {
	e, ok := j.logs.entry(ev.Room, ev.Seq)
	if !ok {
		return fmt.Sprintf("delivered seq %d, which is not in the room log (%d entries)",
			ev.Seq, len(j.h.Final.Logs[ev.Room]))
	}
	if m := j.membership(ev.Room, ev.User); !m.allows(ev.Seq) {
		return fmt.Sprintf("delivered seq %d outside the user's membership windows %s (from its join/leave acks)",
			ev.Seq, formatMembership(m))
	}
	if e.MsgID != ev.MsgID {
		return fmt.Sprintf("delivered msgid %q at seq %d but the log holds %q there",
			ev.MsgID, ev.Seq, e.MsgID)
	}
	return ""
}

// CheckNoStray reports every delivery whose seq is in none of the user's
// windows (as its acks tell them), or not in the room log, or whose MsgID
// differs from the log entry.
func CheckNoStray(h *History) []Violation { return newJudge(h).noStray() }

func (j *judge) noStray() []Violation {
	var out []Violation
	j.h.EachDelivery(func(ev Event) {
		if why := j.strayReason(ev); why != "" {
			out = append(out, Violation{
				Property: PropNoStray, User: ev.User, Room: ev.Room, Seq: ev.Seq,
				Detail: why, TraceLines: lines(ev.TraceLine),
			})
		}
	})
	return out
}

type userRoomSeq struct {
	user, room string
	seq        uint64
}

type roomSeq struct {
	room string
	seq  uint64
}

// tally counts the deliveries of one (user, room, seq) and keeps their lines.
type tally struct {
	n     int
	lines []int
}

// CheckExactlyOnce judges the run after the drain: every (user, room, seq)
// the derived windows certainly owe and the log holds must have been
// delivered exactly once, and a seq the windows only may owe at most once.
// Deliveries are counted by seq; a wrong MsgID at the right seq is a stray
// and reported by CheckNoStray only.
func CheckExactlyOnce(h *History) []Violation { return newJudge(h).exactlyOnce() }

func (j *judge) exactlyOnce() []Violation {
	got := countDeliveries(j.h)
	acks := map[roomSeq][]int{}
	for _, ev := range j.h.Events {
		if ev.Kind == KindSend && ev.OK && ev.Seq > 0 {
			k := roomSeq{ev.Room, ev.Seq}
			acks[k] = append(acks[k], ev.TraceLine)
		}
	}
	var out []Violation
	for _, room := range sortedKeys(j.members) {
		for _, user := range sortedKeys(j.members[room]) {
			m := j.members[room][user]
			for _, e := range j.h.Final.Logs[room] {
				if !m.allows(e.Seq) {
					continue
				}
				if v, bad := judgeCount(got.tally(user, room, e.Seq), acks[roomSeq{room, e.Seq}], m.owes(e.Seq)); bad {
					v.User, v.Room, v.Seq = user, room, e.Seq
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// deliveryCounts counts deliveries per (user, room, seq) in memory that
// does not grow with the deliveries: per user and room the set of seqs
// delivered at least once, and only for seqs delivered more than once
// their count and the trace lines of every delivery (a second pass).
type deliveryCounts struct {
	once  map[userRoom]*seqSet
	multi map[userRoomSeq]*tally
}

func countDeliveries(h *History) deliveryCounts {
	c := deliveryCounts{once: map[userRoom]*seqSet{}, multi: map[userRoomSeq]*tally{}}
	h.EachDelivery(func(ev Event) {
		k := userRoom{ev.User, ev.Room}
		s := c.once[k]
		if s == nil {
			s = &seqSet{}
			c.once[k] = s
		}
		if !s.add(ev.Seq) {
			c.multi[userRoomSeq{ev.User, ev.Room, ev.Seq}] = &tally{}
		}
	})
	if len(c.multi) == 0 {
		return c
	}
	h.EachDelivery(func(ev Event) {
		if t := c.multi[userRoomSeq{ev.User, ev.Room, ev.Seq}]; t != nil {
			t.n++
			t.lines = append(t.lines, ev.TraceLine)
		}
	})
	return c
}

// tally returns the count and lines of (user, room, seq); nil: never
// delivered.
func (c deliveryCounts) tally(user, room string, seq uint64) *tally {
	if t := c.multi[userRoomSeq{user, room, seq}]; t != nil {
		return t
	}
	if s := c.once[userRoom{user, room}]; s != nil && s.has(seq) {
		return &tally{n: 1}
	}
	return nil
}

// judgeCount turns one message's tally into a violation. A missing message
// has no delivery to cite, so it cites the send's ack instead.
func judgeCount(t *tally, ackLines []int, owed bool) (Violation, bool) {
	switch {
	case t == nil && owed:
		return Violation{
			Property:   PropExactlyOnce,
			Detail:     "owed by the user's membership windows but never delivered",
			TraceLines: lines(ackLines...),
		}, true
	case t != nil && t.n > 1:
		return Violation{
			Property:   PropExactlyOnce,
			Detail:     fmt.Sprintf("delivered %d times", t.n),
			TraceLines: lines(t.lines...),
		}, true
	}
	return Violation{}, false
}

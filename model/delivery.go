package model

import (
	"fmt"
	"slices"
	"strings"
)

// Expected returns the seqs user must receive in room over the whole run:
// every seq of the room's final log inside one of the user's windows,
// ascending.
func Expected(f Final, room, user string) []uint64 {
	ws := f.Windows[room][user]
	var out []uint64
	for _, e := range f.Logs[room] {
		if inWindows(ws, e.Seq) {
			out = append(out, e.Seq)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func inWindows(ws []Window, seq uint64) bool {
	for _, w := range ws {
		if w.Contains(seq) {
			return true
		}
	}
	return false
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

// owed reports whether a delivery's (room, seq) is one its user must
// receive. Deliveries that are not owed are strays; the ordering and
// exactly-once checkers skip them so that each fault is reported once.
func owed(f Final, x logIndex, ev Event) bool {
	_, ok := x.entry(ev.Room, ev.Seq)
	return ok && inWindows(f.Windows[ev.Room][ev.User], ev.Seq)
}

// strayReason says why a delivery is a stray, or "" when it is not.
func strayReason(f Final, x logIndex, ev Event) string {
	e, ok := x.entry(ev.Room, ev.Seq)
	if !ok {
		return fmt.Sprintf("delivered seq %d, which is not in the room log (%d entries)",
			ev.Seq, len(f.Logs[ev.Room]))
	}
	if ws := f.Windows[ev.Room][ev.User]; !inWindows(ws, ev.Seq) {
		return fmt.Sprintf("delivered seq %d outside the user's membership windows %s",
			ev.Seq, formatWindows(ws))
	}
	if e.MsgID != ev.MsgID {
		return fmt.Sprintf("delivered msgid %q at seq %d but the log holds %q there",
			ev.MsgID, ev.Seq, e.MsgID)
	}
	return ""
}

// CheckNoStray reports every delivery whose seq is in none of the user's
// windows, or not in the room log, or whose MsgID differs from the log entry.
func CheckNoStray(h *History) []Violation {
	x := indexLogs(h.Final)
	var out []Violation
	for _, ev := range h.Events {
		if ev.Kind != KindDeliver {
			continue
		}
		if why := strayReason(h.Final, x, ev); why != "" {
			out = append(out, Violation{
				Property: PropNoStray, User: ev.User, Room: ev.Room, Seq: ev.Seq,
				Detail: why, TraceLines: lines(ev.TraceLine),
			})
		}
	}
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
// the final windows and logs owe must have been delivered exactly once.
// Deliveries are counted by seq; a wrong MsgID at the right seq is a stray
// and reported by CheckNoStray only.
func CheckExactlyOnce(h *History) []Violation {
	got := map[userRoomSeq]*tally{}
	acks := map[roomSeq][]int{}
	for _, ev := range h.Events {
		switch {
		case ev.Kind == KindDeliver:
			k := userRoomSeq{ev.User, ev.Room, ev.Seq}
			if got[k] == nil {
				got[k] = &tally{}
			}
			got[k].n++
			got[k].lines = append(got[k].lines, ev.TraceLine)
		case ev.Kind == KindSend && ev.OK && ev.Seq > 0:
			k := roomSeq{ev.Room, ev.Seq}
			acks[k] = append(acks[k], ev.TraceLine)
		}
	}
	var out []Violation
	for _, room := range sortedKeys(h.Final.Windows) {
		for _, user := range sortedKeys(h.Final.Windows[room]) {
			for _, seq := range Expected(h.Final, room, user) {
				if v, bad := judgeCount(got[userRoomSeq{user, room, seq}], acks[roomSeq{room, seq}]); bad {
					v.User, v.Room, v.Seq = user, room, seq
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// judgeCount turns one owed message's tally into a violation. A missing
// message has no delivery to cite, so it cites the send's ack instead.
func judgeCount(t *tally, ackLines []int) (Violation, bool) {
	switch {
	case t == nil:
		return Violation{
			Property:   PropExactlyOnce,
			Detail:     "owed by the user's membership windows but never delivered",
			TraceLines: lines(ackLines...),
		}, true
	case t.n > 1:
		return Violation{
			Property:   PropExactlyOnce,
			Detail:     fmt.Sprintf("delivered %d times", t.n),
			TraceLines: lines(t.lines...),
		}, true
	}
	return Violation{}, false
}

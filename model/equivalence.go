package model

import (
	"fmt"
)

// deliveredIDs maps user, then room, then message (MsgID, and the sender
// when the delivery recorded it: an id is scoped to its sender) to the
// trace line of its first delivery.
type deliveredIDs map[string]map[string]map[string]int

func collectDelivered(h *History) deliveredIDs {
	d := deliveredIDs{}
	if h == nil {
		return d
	}
	h.EachDelivery(func(ev Event) {
		if d[ev.User] == nil {
			d[ev.User] = map[string]map[string]int{}
		}
		if d[ev.User][ev.Room] == nil {
			d[ev.User][ev.Room] = map[string]int{}
		}
		id := ev.MsgID
		if ev.Sender != "" {
			id = ev.Sender + "/" + ev.MsgID
		}
		if _, dup := d[ev.User][ev.Room][id]; !dup {
			d[ev.User][ev.Room][id] = ev.TraceLine
		}
	})
	return d
}

// Unsettled returns the rooms of h where a membership change overlapped a
// send in real time (a join or leave call and a send call whose
// invocation-to-completion spans intersect, or a membership call that never
// completed): there the delivered set may legitimately depend on timing.
func Unsettled(h *History) map[string]bool {
	type call struct{ from, to instant }
	changes, sends := map[string][]call{}, map[string][]call{}
	for _, ev := range h.Events {
		s := call{ev.inv(), ev.done()}
		switch {
		case ev.Kind == KindJoin || ev.Kind == KindLeave:
			if !ev.OK && !definite[ev.Err] {
				s.to = instant{1 << 62, 0} // outcome unknown: may take effect any time
			}
			changes[ev.Room] = append(changes[ev.Room], s)
		case ev.Kind == KindSend:
			sends[ev.Room] = append(sends[ev.Room], s)
		}
	}
	out := map[string]bool{}
	for room, cs := range changes {
		for _, c := range cs {
			for _, s := range sends[room] {
				if !c.to.before(s.from) && !s.to.before(c.from) {
					out[room] = true
				}
			}
		}
	}
	return out
}

// CheckModeEquivalence is the differential check for calm workloads (no
// membership change concurrent with a send): the same workload and seed must
// give every user the same set of (room, MsgID) deliveries in every relay
// mode. Seqs are not compared: each run numbers its own log. Rooms that are
// not calm in either run are skipped. Each user and room where one run has
// deliveries the other lacks is one violation per direction, citing lines
// of the trace of the run that has them.
func CheckModeEquivalence(a, b *History) []Violation {
	skip := Unsettled(a)
	for r := range Unsettled(b) {
		skip[r] = true
	}
	da, db := collectDelivered(a), collectDelivered(b)
	var out []Violation
	for _, user := range unionKeys(da, db) {
		for _, room := range unionKeys(da[user], db[user]) {
			if skip[room] {
				continue
			}
			out = append(out, onlyIn(a.Mode, b.Mode, user, room, da[user][room], db[user][room])...)
			out = append(out, onlyIn(b.Mode, a.Mode, user, room, db[user][room], da[user][room])...)
		}
	}
	return out
}

func onlyIn(has, lacks, user, room string, got, other map[string]int) []Violation {
	var ids []string
	var ls []int
	for _, id := range sortedKeys(got) {
		if _, ok := other[id]; !ok {
			ids = append(ids, id)
			if len(ls) < fewMax {
				ls = append(ls, got[id])
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return []Violation{{
		Property: PropModeEquivalence, User: user, Room: room,
		Detail: fmt.Sprintf("%d message(s) delivered in the %s run but not in the %s run: %s (trace lines of the %s run)",
			len(ids), has, lacks, few(ids), has),
		TraceLines: lines(ls...),
	}}
}

func unionKeys[V any](a, b map[string]V) []string {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return sortedKeys(u)
}

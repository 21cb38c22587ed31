package model

import "fmt"

// deliveredIDs maps user, then room, then MsgID to the trace line of its
// first delivery.
type deliveredIDs map[string]map[string]map[string]int

func collectDelivered(h *History) deliveredIDs {
	d := deliveredIDs{}
	if h == nil {
		return d
	}
	for _, ev := range h.Events {
		if ev.Kind != KindDeliver {
			continue
		}
		if d[ev.User] == nil {
			d[ev.User] = map[string]map[string]int{}
		}
		if d[ev.User][ev.Room] == nil {
			d[ev.User][ev.Room] = map[string]int{}
		}
		if _, dup := d[ev.User][ev.Room][ev.MsgID]; !dup {
			d[ev.User][ev.Room][ev.MsgID] = ev.TraceLine
		}
	}
	return d
}

// CheckModeEquivalence is the differential check for calm workloads (no
// membership change concurrent with a send): the same workload and seed must
// give every user the same set of (room, MsgID) deliveries in single and bulk
// mode. Seqs are not compared: each run numbers its own log. Each user and
// room where one run has deliveries the other lacks is one violation per
// direction, citing lines of the trace of the run that has them.
func CheckModeEquivalence(single, bulk *History) []Violation {
	s, b := collectDelivered(single), collectDelivered(bulk)
	var out []Violation
	for _, user := range unionKeys(s, b) {
		for _, room := range unionKeys(s[user], b[user]) {
			out = append(out, onlyIn("single", "bulk", user, room, s[user][room], b[user][room])...)
			out = append(out, onlyIn("bulk", "single", user, room, b[user][room], s[user][room])...)
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

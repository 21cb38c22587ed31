package model

import "fmt"

// CheckNoUnfairCut is no-unfair-cut: a client that reads at a steady
// pace is never ended as too slow. A stream the server ended with
// ResourceExhausted (the relay's slow-client cut) must belong to a client
// that a fault made slow: a stall, a slow reader or a vanish of that user
// active at the cut (until its end plus its kind's recovery: the client
// sees the cut only once it reads again), or a fault of the session's
// node (a pause or a crash holds its pump as a slow client would) in
// the stretch before it.
func CheckNoUnfairCut(h *History) []Violation {
	var out []Violation
	for _, ev := range h.Events {
		if ev.Kind != KindDisconnect || ev.Err != "ResourceExhausted" {
			continue
		}
		if excusedCut(h, ev) {
			continue
		}
		out = append(out, Violation{Property: PropUnfairCut, User: ev.User, Node: ev.Node, TraceLines: lines(ev.TraceLine),
			Detail: fmt.Sprintf("at t=%v the node ended the stream as too slow, though no fault made the client slow (it read at its pace)", ev.Time)})
	}
	return out
}

func excusedCut(h *History, ev Event) bool {
	for _, f := range h.Faults {
		if f.Op || f.From > ev.Time {
			continue
		}
		end := f.To + recoveryOf(h, f.Kind)
		if f.To >= 0 && end < ev.Time-recoveryOf(h, RecoveryDefault) {
			continue
		}
		if f.User == ev.User || f.touchesNode(ev.Node) || f.Redis || (f.To >= 0 && end >= ev.Time && len(f.Nodes) > 0) {
			if f.User == ev.User && f.To >= 0 && end < ev.Time {
				continue
			}
			return true
		}
	}
	return false
}

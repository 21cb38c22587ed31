package model

import (
	"fmt"
	"strings"
	"time"
)

// CheckStreamLeaks checks every sample (open client streams equal connected
// sessions; open peer connections equal live peers times channels per peer)
// and that every vanished client's stream is closed by its node within
// h.KeepAliveBound.
func CheckStreamLeaks(h *History) []Violation {
	var out []Violation
	for _, s := range h.Samples {
		out = append(out, sampleStreams(s)...)
	}
	for i, ev := range h.Events {
		bound, judged := closeBound(h, ev)
		if !judged || closedBefore(ev, h.Events[:i]) {
			continue
		}
		bound += pausedFor(h, ev.Node, ev.Time, ev.Time+bound)
		if v, bad := judgeVanish(ev, h.Events[i+1:], bound); bad {
			out = append(out, v)
		}
	}
	return out
}

// closeBound says whether a disconnect obliges its node to close the
// stream, and within what: a vanished client within the keep-alive bound,
// a client that closed its stream itself within h.CloseBound (its cancel
// reaches the node with the next frame). A stream the server ended is not
// judged here.
func closeBound(h *History, ev Event) (time.Duration, bool) {
	switch {
	case ev.Kind != KindDisconnect || ev.Err != "":
		return 0, false
	case ev.Vanish:
		return h.KeepAliveBound, true
	case h.CloseBound > 0:
		return h.CloseBound, true
	}
	return 0, false
}

func sampleStreams(s Sample) []Violation {
	var out []Violation
	// A session being opened or closed at the sample has its stream counted
	// but not (yet, or any more) its session: equality holds only between
	// transitions.
	if s.Transitions == 0 && s.OpenStreams != s.Sessions {
		out = append(out, Violation{
			Property: PropStreamLeak, Node: s.Node,
			Detail: fmt.Sprintf("at t=%v: %d open client streams but %d connected sessions",
				s.Time, s.OpenStreams, s.Sessions),
		})
	}
	// Connections are dialled lazily and re-dialled after a peer restarts, so
	// fewer is fine; more means connections outlived their peer.
	if want := s.LivePeers * s.ChannelsPerPeer; s.OutConns > want {
		out = append(out, Violation{
			Property: PropStreamLeak, Node: s.Node,
			Detail: fmt.Sprintf("at t=%v: %d open peer connections but only %d live peers x %d channels = %d allowed",
				s.Time, s.OutConns, s.LivePeers, s.ChannelsPerPeer, want),
		})
	}
	return out
}

// closedBefore reports whether the node had already closed the stream
// before the client vanished (a crash, say, that the client had not noticed
// yet): a session-closed for the user on that node after its last connect
// there.
func closedBefore(ev Event, before []Event) bool {
	for i := len(before) - 1; i >= 0; i-- {
		e := before[i]
		if e.User != ev.User || e.Node != ev.Node {
			continue
		}
		switch e.Kind {
		case KindSessionClosed:
			return true
		case KindConnect:
			return false
		}
	}
	return false
}

// judgeVanish looks, in the events after a vanish, for the first
// session-closed of the same user on the same node. Keeping it to the first
// one means a reconnect to the node before the close cannot hide a leak
// behind a later, unrelated close. A bound <= 0 means the run set none:
// then only the existence of the close is checked.
func judgeVanish(ev Event, after []Event, bound time.Duration) (Violation, bool) {
	v := Violation{Property: PropStreamLeak, User: ev.User, Node: ev.Node}
	for _, c := range after {
		if c.Kind != KindSessionClosed || c.User != ev.User || c.Node != ev.Node || c.Time < ev.Time {
			continue
		}
		if bound <= 0 || c.Time-ev.Time <= bound {
			return Violation{}, false
		}
		v.Detail = fmt.Sprintf("client %s at t=%v; the node closed its stream at t=%v, %v later (bound %v)",
			leftHow(ev), ev.Time, c.Time, c.Time-ev.Time, bound)
		v.TraceLines = lines(ev.TraceLine, c.TraceLine)
		return v, true
	}
	v.Detail = fmt.Sprintf("client %s at t=%v; the node never closed its stream", leftHow(ev), ev.Time)
	v.TraceLines = lines(ev.TraceLine)
	return v, true
}

// CheckGoroutineLeaks turns goroutines left after teardown into one readable
// violation listing them.
func CheckGoroutineLeaks(h *History) []Violation {
	left := h.Final.LeftoverGoroutines
	if len(left) == 0 {
		return nil
	}
	return []Violation{{
		Property: PropGoroutineLeak,
		Detail: fmt.Sprintf("%d goroutine(s) left after teardown: %s",
			len(left), strings.Join(left, "; ")),
	}}
}

func leftHow(ev Event) string {
	if ev.Vanish {
		return "vanished"
	}
	return "closed its stream"
}

// pausedFor is how long the pauses of node that overlap [from, to] last
// from `from` on: a paused node closes nothing, so a deadline moves by as
// much. Pauses chain: one that starts inside the time an earlier one
// added moves the deadline again (a node paused twice in a row).
func pausedFor(h *History, node string, from, to time.Duration) time.Duration {
	var d time.Duration
	counted := make([]bool, len(h.Faults))
	for grew := true; grew; {
		grew = false
		for i, f := range h.Faults {
			if !counted[i] && f.Kind == FaultPause && f.touchesNode(node) && f.From < to+d && f.To > from {
				d += f.To - max(f.From, from)
				counted[i], grew = true, true
			}
		}
	}
	return d
}

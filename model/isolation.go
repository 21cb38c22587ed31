package model

import (
	"fmt"
	"time"
)

// clientConfined reports whether a fault of kind k is a misbehaviour of
// one client alone (its User): a stall, a slow reader, a vanished client.
func clientConfined(f Fault) bool {
	return !f.Op && f.User != "" && (f.Kind == FaultStall || f.Kind == FaultSlow || f.Kind == FaultVanish)
}

// CheckIsolation is isolation: a fault or misbehaviour confined to one
// client (a stall, a slow reader, a vanished client) costs no other user
// anything. While such a fault is active (from its start until its end
// plus its kind's recovery), (1) every member of a room that client was
// never a member of is owed each message live within h.LiveBound (no
// relay of it carries the client: its tasks, relay calls and stream
// items must not wait behind the client's), on the terms
// of timely-live-delivery (the same excuses: any other fault on the
// message's path excuses it; the client-confined fault never does), and
// (2) every send by another user returns on its first try within
// h.SendBound, unless a fault that is not confined to a client (a node,
// link or Redis fault, or any per-operation fault) lay in the send's
// stretch, from the default recovery time before its invocation until it
// returned.
func CheckIsolation(h *History) []Violation {
	if h.LiveBound <= 0 {
		return nil
	}
	var confined []Fault
	for _, f := range h.Faults {
		if clientConfined(f) {
			confined = append(confined, f)
		}
	}
	if len(confined) == 0 {
		return nil
	}
	rooms := everJoined(h)
	active := func(t time.Duration) []Fault {
		var out []Fault
		for _, f := range confined {
			if f.From <= t && (f.To < 0 || t <= f.To+recoveryOf(h, f.Kind)) {
				out = append(out, f)
			}
		}
		return out
	}
	j := newJudge(h)
	first := j.firstDeliveries()
	conns := streams(h.Events)
	var out []Violation
	for _, send := range h.Events {
		if send.Kind != KindSend {
			continue
		}
		fs := active(send.Invoked)
		if len(fs) == 0 {
			continue
		}
		if v, bad := isolatedSend(h, send, fs); bad {
			out = append(out, v)
		}
		if !j.judgedLive(send) {
			continue
		}
		for _, user := range j.roomUsers(send.Room) {
			f, apart := apartFrom(user, send.Room, fs, rooms)
			if !apart {
				continue
			}
			if v, bad := j.judgeLive(send, user, conns[user], first); bad {
				v.Property = PropIsolation
				v.Detail = fmt.Sprintf("while %s's client was under a %s fault (from t=%v; it is no member of %s): %s", f.User, f.Kind, f.From, send.Room, v.Detail)
				out = append(out, v)
			}
		}
	}
	return out
}

// apartFrom returns the first of fs if user's message of room has
// nothing to do with any of their clients: none is user, and none was
// ever a member of room (a relay of the message never carries them).
func apartFrom(user, room string, fs []Fault, rooms map[string]map[string]bool) (Fault, bool) {
	for _, f := range fs {
		if f.User == user || rooms[f.User][room] {
			return Fault{}, false
		}
	}
	return fs[0], true
}

// isolatedSend judges one send invoked while fs were active.
func isolatedSend(h *History, send Event, fs []Fault) (Violation, bool) {
	if h.SendBound <= 0 || send.Err == "Pending" {
		return Violation{}, false
	}
	for _, f := range fs {
		if f.User == send.User {
			return Violation{}, false
		}
	}
	// Held: retried, past the bound, or timed out; a call refused at
	// once (a malformed name, a payload over a limit) was not held.
	took := send.Time - send.Invoked
	if send.Tries <= 1 && took <= h.SendBound && send.Err != "DeadlineExceeded" {
		return Violation{}, false
	}
	// Any fault not confined to a client in the send's stretch excuses
	// it: a node, link or Redis fault, or a per-operation fault (a relay
	// a caller-runs task makes may meet it).
	from := send.Invoked - recoveryOf(h, RecoveryDefault)
	for _, f := range h.Faults {
		if clientConfined(f) || f.From > send.Time {
			continue
		}
		if f.Op && f.From >= from || !f.Op && (f.To < 0 || f.To+recoveryOf(h, f.Kind) >= from) {
			return Violation{}, false
		}
	}
	f := fs[0]
	return Violation{Property: PropIsolation, User: send.User, Room: send.Room, Seq: send.Seq, TraceLines: lines(send.TraceLine),
		Detail: fmt.Sprintf("while %s's client was under a %s fault (from t=%v), %s's send took %v in %d tries (%s; bound %v), with no other fault to excuse it",
			f.User, f.Kind, f.From, send.User, took, send.Tries, map[bool]string{true: "ok", false: send.Err}[send.OK], h.SendBound)}, true
}

// everJoined says, per user, the rooms it ever tried to join (acked or
// not: a member in doubt counts).
func everJoined(h *History) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, ev := range h.Events {
		if ev.Kind == KindJoin && ev.Room != "" {
			if out[ev.User] == nil {
				out[ev.User] = map[string]bool{}
			}
			out[ev.User][ev.Room] = true
		}
	}
	return out
}

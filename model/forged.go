package model

import "fmt"

// CheckForgedRejected judges the calls clients made with a forged user
// credential (KindForgedSend, KindForgedJoin; User is the user the request
// named). Each must end Unauthenticated, or with an outcome the client
// never learnt (a timeout, an unreachable node, a run that ended first),
// and must change nothing whatever its outcome: no room log entry and no
// delivery carries a forged send's message id, and after a forged join
// the named user is delivered nothing of the room outside the windows its
// own join and leave acks derive (the forged join opened none).
func CheckForgedRejected(h *History) []Violation {
	j := newJudge(h)
	var out []Violation
	for _, ev := range h.Events {
		if ev.Kind != KindForgedSend && ev.Kind != KindForgedJoin {
			continue
		}
		out = append(out, forgedOutcome(ev)...)
		if ev.Kind == KindForgedSend {
			out = append(out, j.forgedSendEffects(ev)...)
		} else {
			out = append(out, j.forgedJoinEffects(ev)...)
		}
	}
	return out
}

func forgedViolation(ev Event, seq uint64, detail string, evidence ...int) Violation {
	return Violation{Property: PropForged, User: ev.User, Room: ev.Room, Seq: seq, Detail: detail,
		TraceLines: lines(append(evidence, ev.TraceLine)...)}
}

// forgedOutcome: accepted, or rejected for any reason but the credential
// (the handler ran: the call got past authentication), is a violation.
func forgedOutcome(ev Event) []Violation {
	call := map[Kind]string{KindForgedSend: "send", KindForgedJoin: "join"}[ev.Kind]
	switch {
	case ev.OK:
		return []Violation{forgedViolation(ev, ev.Seq, fmt.Sprintf("a %s with a forged credential for %s was accepted (seq %d)", call, ev.User, ev.Seq))}
	case definite[ev.Err] && ev.Err != "Unauthenticated":
		return []Violation{forgedViolation(ev, 0, fmt.Sprintf("a %s with a forged credential for %s was answered %s, not Unauthenticated: it got past authentication", call, ev.User, ev.Err))}
	}
	return nil
}

// forgedSendEffects: the forged message (the named user's id) is in no
// log entry of its room and was delivered to nobody. A message is its
// sender and id: the same id from another sender is another message.
func (j *judge) forgedSendEffects(ev Event) []Violation {
	var out []Violation
	for _, e := range j.h.Final.Logs[ev.Room] {
		if e.MsgID == ev.MsgID && e.Sender == ev.User {
			out = append(out, forgedViolation(ev, e.Seq, fmt.Sprintf("the forged send %q is in the room log at seq %d (sender %s)", ev.MsgID, e.Seq, e.Sender)))
		}
	}
	var got []int
	var users []string
	j.h.EachDelivery(func(d Event) {
		if d.Room == ev.Room && d.MsgID == ev.MsgID && (d.Sender == "" || d.Sender == ev.User) {
			got = append(got, d.TraceLine)
			users = append(users, d.User)
		}
	})
	if len(got) > 0 {
		out = append(out, forgedViolation(ev, 0, fmt.Sprintf("the forged send %q was delivered to %s (%d deliveries)", ev.MsgID, few(users), len(got)), got...))
	}
	return out
}

// forgedJoinEffects: after the forged join was invoked, the named user
// receives nothing of the room that its own windows do not allow.
func (j *judge) forgedJoinEffects(ev Event) []Violation {
	m := j.membership(ev.Room, ev.User)
	var out []Violation
	j.h.EachDelivery(func(d Event) {
		if len(out) > 0 || d.User != ev.User || d.Room != ev.Room || d.done().before(ev.inv()) || m.allows(d.Seq) {
			return
		}
		out = append(out, forgedViolation(ev, d.Seq, fmt.Sprintf(
			"after a forged join for %s, %s was delivered seq %d outside its membership windows %s: the forged join opened a window",
			ev.User, ev.User, d.Seq, formatMembership(m)), d.TraceLine))
	})
	return out
}

package model

import (
	"fmt"
	"strings"
)

// CheckForgedRejected judges the calls made with a forged credential (the
// forged kinds, one per Chat and Relay method; User is the user the
// request named, or a relay's recipient). Each must end Unauthenticated,
// or with an outcome the caller never learnt (a timeout, an unreachable
// node, a run that ended first), and must change nothing whatever its
// outcome: no room log entry and no delivery carries a forged send's or
// relay's message id, and after a forged join the named user is delivered
// nothing of the room outside the windows its own join and leave acks
// derive (the forged join opened none). A forged leave, room creation or
// delivery stream has no effect of its own to look for here: accepted, it
// is a violation by its outcome (and a leave that closed a window shows
// as loss).
func CheckForgedRejected(h *History) []Violation {
	var forged []Event
	for _, ev := range h.Events {
		if ev.Kind.Forged() {
			forged = append(forged, ev)
		}
	}
	if len(forged) == 0 {
		return nil
	}
	var out []Violation
	for _, ev := range forged {
		out = append(out, forgedOutcome(ev)...)
	}
	return append(out, forgedEffects(newJudge(h), forged)...)
}

func forgedViolation(ev Event, seq uint64, detail string, evidence ...int) Violation {
	return Violation{Property: PropForged, User: ev.User, Room: ev.Room, Seq: seq, Detail: detail,
		TraceLines: lines(append(evidence, ev.TraceLine)...)}
}

// forgedOutcome: accepted, or rejected for any reason but the credential
// (the handler ran: the call got past authentication), is a violation.
// Unimplemented is the handler's answer too (a relay method the node's
// protocol version lacks; interceptors authenticate before it).
func forgedOutcome(ev Event) []Violation {
	call := callOf(ev)
	cred := ""
	if ev.Cred != "" {
		cred = " (" + ev.Cred + ")"
	}
	switch {
	case ev.OK:
		seq := ""
		if ev.Seq != 0 {
			seq = fmt.Sprintf(" (seq %d)", ev.Seq)
		}
		return []Violation{forgedViolation(ev, ev.Seq, fmt.Sprintf("a %s with a forged credential%s for %s was accepted%s", call, cred, ev.User, seq))}
	case (definite[ev.Err] || ev.Err == "Unimplemented") && ev.Err != "Unauthenticated":
		return []Violation{forgedViolation(ev, 0, fmt.Sprintf("a %s with a forged credential%s for %s was answered %s, not Unauthenticated: it got past authentication", call, cred, ev.User, ev.Err))}
	}
	return nil
}

// forgedEffects: the forged message (the named user's id: a message is its
// sender and id, and the same id from another sender is another message)
// of a forged send or relay is in no log entry of its room and was
// delivered to nobody; after a forged join was
// invoked, the named user receives nothing of the room that its own
// windows do not allow. Deliveries are read in one pass for every forged
// call (the simulator keeps them in the compact delivery log).
func forgedEffects(j *judge, forged []Event) []Violation {
	var out []Violation
	type msgKey struct{ room, msg, sender string }
	type userKey struct{ room, user string }
	msgs := map[msgKey][]int{}   // forged message -> its calls (indices into forged)
	joins := map[userKey][]int{} // forged join's room and user -> its calls
	for i, ev := range forged {
		switch {
		case ev.Kind.carriesMsg():
			msgs[msgKey{ev.Room, ev.MsgID, ev.User}] = append(msgs[msgKey{ev.Room, ev.MsgID, ev.User}], i)
			for _, e := range j.h.Final.Logs[ev.Room] {
				if e.MsgID == ev.MsgID && e.Sender == ev.User {
					out = append(out, forgedViolation(ev, e.Seq, fmt.Sprintf("the forged %s %q is in the room log at seq %d (sender %s)", callOf(ev), ev.MsgID, e.Seq, e.Sender)))
				}
			}
		case ev.Kind == KindForgedJoin:
			joins[userKey{ev.Room, ev.User}] = append(joins[userKey{ev.Room, ev.User}], i)
		}
	}
	got := make([][]int, len(forged))      // trace lines of the deliveries of each forged message
	users := make([][]string, len(forged)) // and their users
	opened := make([]*Event, len(forged))  // the first delivery outside a forged join's windows
	j.h.EachDelivery(func(d Event) {
		for _, i := range msgs[msgKey{d.Room, d.MsgID, d.Sender}] {
			got[i], users[i] = append(got[i], d.TraceLine), append(users[i], d.User)
		}
		if d.Sender == "" { // not recorded: any sender's message with the id
			for k, is := range msgs {
				if k.room == d.Room && k.msg == d.MsgID {
					for _, i := range is {
						got[i], users[i] = append(got[i], d.TraceLine), append(users[i], d.User)
					}
				}
			}
		}
		for _, i := range joins[userKey{d.Room, d.User}] {
			if opened[i] == nil && !d.done().before(forged[i].inv()) && !j.membership(d.Room, d.User).allows(d.Seq) {
				opened[i] = &d
			}
		}
	})
	for i, ev := range forged {
		if len(got[i]) > 0 {
			out = append(out, forgedViolation(ev, 0, fmt.Sprintf("the forged %s %q was delivered to %s (%d deliveries)", callOf(ev), ev.MsgID, few(users[i]), len(got[i])), got[i]...))
		}
		if d := opened[i]; d != nil {
			out = append(out, forgedViolation(ev, d.Seq, fmt.Sprintf(
				"after a forged join for %s, %s was delivered seq %d outside its membership windows %s: the forged join opened a window",
				ev.User, ev.User, d.Seq, formatMembership(j.membership(ev.Room, ev.User))), d.TraceLine))
		}
	}
	return out
}

// callOf names a forged call's method: send, join, relay-stream, ...
func callOf(ev Event) string { return strings.TrimPrefix(string(ev.Kind), "forged-") }

package model

import (
	"fmt"
	"unicode/utf8"
)

// Calls that name a room, user or message id no valid name looks like
// (empty, over-long, invalid UTF-8, a control character or a space): the
// simulator's adversarial name calls. They are kinds of their own so that
// no checker of real calls counts them; CheckBadNamesRefused judges them.
const (
	// KindBadCreate: CreateRoom of a malformed Room.
	KindBadCreate Kind = "bad-create"
	// KindBadJoin: Join of Room as User, one of them malformed.
	KindBadJoin Kind = "bad-join"
	// KindBadSend: Send of MsgID to Room as User, one of them malformed.
	KindBadSend Kind = "bad-send"
	// KindBadConnect: Connect as a malformed User.
	KindBadConnect Kind = "bad-connect"
)

// IsBadName reports whether k is one of the malformed-name call kinds.
func IsBadName(k Kind) bool {
	return k == KindBadCreate || k == KindBadJoin || k == KindBadSend || k == KindBadConnect
}

// CheckBadNamesRefused judges the calls clients made naming a malformed
// room, user or message id. Each must end InvalidArgument (a name that is
// not valid UTF-8 may instead end Internal: protobuf refuses to marshal
// it, so the call never leaves the client; a call acting for the empty
// user may end Unauthenticated: a node with a user secret authenticates
// before it reads names, and nobody has a credential), or with an outcome the client
// never learnt (a timeout, an unreachable node, a run that ended first);
// and whatever its outcome it changes nothing: a malformed room has no
// log entry and no delivery, a malformed send's message id is in no log entry
// of its room and was delivered to nobody, a malformed join opened no
// membership window (its user is delivered nothing of the room outside
// the windows its real joins derive), and a malformed user is delivered
// nothing and has no session.
func CheckBadNamesRefused(h *History) []Violation {
	j := newJudge(h)
	var out []Violation
	for _, ev := range h.Events {
		if !IsBadName(ev.Kind) {
			continue
		}
		out = append(out, badNameOutcome(ev)...)
		out = append(out, j.badNameEffects(ev)...)
	}
	return out
}

func badNameViolation(ev Event, seq uint64, detail string, evidence ...int) Violation {
	return Violation{Property: PropBadNames, User: fmt.Sprintf("%q", ev.User), Room: fmt.Sprintf("%q", ev.Room), Seq: seq, Detail: detail,
		TraceLines: lines(append(evidence, ev.TraceLine)...)}
}

func badNameCall(ev Event) string {
	s := fmt.Sprintf("%s of room %q as %q", ev.Kind, ev.Room, ev.User)
	if ev.MsgID != "" {
		s += fmt.Sprintf(" id %q", ev.MsgID)
	}
	return s
}

func badNameOutcome(ev Event) []Violation {
	invalidUTF8 := !utf8.ValidString(ev.Room) || !utf8.ValidString(ev.User) || !utf8.ValidString(ev.MsgID)
	switch {
	case ev.OK:
		return []Violation{badNameViolation(ev, ev.Seq, fmt.Sprintf("the %s was accepted (seq %d)", badNameCall(ev), ev.Seq))}
	case ev.Err == "InvalidArgument", ev.Err == "Internal" && invalidUTF8, ev.Err == "Unauthenticated" && ev.User == "":
		return nil
	case definite[ev.Err] || ev.Err == "Internal":
		return []Violation{badNameViolation(ev, 0, fmt.Sprintf("the %s was answered %s, not InvalidArgument", badNameCall(ev), ev.Err))}
	}
	return nil
}

func (j *judge) badNameEffects(ev Event) []Violation {
	var out []Violation
	switch ev.Kind {
	case KindBadCreate:
		if log := j.h.Final.Logs[ev.Room]; len(log) > 0 {
			out = append(out, badNameViolation(ev, 0, fmt.Sprintf("after the %s the room has a log of %d entries", badNameCall(ev), len(log))))
		}
	case KindBadSend:
		for _, e := range j.h.Final.Logs[ev.Room] {
			if e.MsgID == ev.MsgID && e.Sender == ev.User {
				out = append(out, badNameViolation(ev, e.Seq, fmt.Sprintf("the %s is in the room log at seq %d", badNameCall(ev), e.Seq)))
			}
		}
	}
	var got []int
	for _, d := range j.h.Events {
		if d.Kind == KindSessionClosed && ev.Kind == KindBadConnect && d.User == ev.User {
			out = append(out, badNameViolation(ev, 0, fmt.Sprintf("after the %s a node had a session of that user", badNameCall(ev)), d.TraceLine))
		}
		if d.Kind != KindDeliver {
			continue
		}
		switch {
		case ev.Kind == KindBadConnect && d.User == ev.User,
			ev.Kind == KindBadCreate && d.Room == ev.Room,
			ev.Kind == KindBadSend && d.Room == ev.Room && d.MsgID == ev.MsgID,
			ev.Kind == KindBadJoin && d.Room == ev.Room && d.User == ev.User && !d.done().before(ev.inv()) && !j.membership(ev.Room, ev.User).allows(d.Seq):
			got = append(got, d.TraceLine)
		}
	}
	if len(got) > 0 {
		out = append(out, badNameViolation(ev, 0, fmt.Sprintf("after the %s, %d deliveries name what it named", badNameCall(ev), len(got)), got...))
	}
	return out
}

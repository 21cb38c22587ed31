package model

import (
	"fmt"
)

// CheckContent judges what messages say, not only where they are: a
// client message id is scoped to its sender, so a message is (sender,
// msg id) and its content is its payload. It reports
//
//   - a delivery whose message id, sender or payload differs from the
//     room log's entry for its seq (what members read is what the log
//     holds);
//   - an acked send whose seq's log entry is another sender's message or
//     holds another payload than the send sent (the ack names what was
//     sent, not a message with the same id);
//   - a log entry whose payload is none its sender sent with its id, or
//     whose (sender, msg id) no recorded send made (forged sends are
//     CheckForgedRejected's);
//   - an acked send whose seq is outside its sender's membership windows
//     (the relay accepted a non-member's send), and a steal (a send with
//     another user's message id) refused with a definite code other than
//     FailedPrecondition.
//
// Sender and payload are compared only where the history recorded them
// (Event.Sender, a non-zero Payload digest): an older history is judged
// on message ids alone.
func CheckContent(h *History) []Violation {
	j := newJudge(h)
	sent, forged, recorded := sentContent(h.Events)
	var out []Violation
	out = append(out, j.contentOfLogs(sent, forged, recorded)...)
	out = append(out, j.contentOfSends()...)
	return append(out, j.contentOfDeliveries()...)
}

// sendKey is a message: a client message id is scoped to its sender.
type sendKey struct {
	room, sender, id string
}

// sentPayloads are the payload digests the sends of one message carried
// (a retry may be a new call with the same id), with their trace lines.
type sentPayloads struct {
	digests []uint64
	lines   []int
}

// sentContent indexes every send by message (whatever its outcome: one
// that timed out may still be sequenced), the forged sends' messages,
// and whether any send recorded its payload.
func sentContent(events []Event) (map[sendKey]*sentPayloads, map[sendKey]bool, bool) {
	sent := map[sendKey]*sentPayloads{}
	forged := map[sendKey]bool{}
	recorded := false
	for _, ev := range events {
		switch ev.Kind {
		case KindSend:
			k := sendKey{ev.Room, ev.User, ev.MsgID}
			s := sent[k]
			if s == nil {
				s = &sentPayloads{}
				sent[k] = s
			}
			if ev.Payload != 0 {
				recorded = true
				s.digests = append(s.digests, ev.Payload)
			}
			s.lines = append(s.lines, ev.TraceLine)
		case KindForgedSend:
			forged[sendKey{ev.Room, ev.User, ev.MsgID}] = true
		}
	}
	return sent, forged, recorded
}

func contentViolation(user, room string, seq uint64, detail string, evidence ...int) Violation {
	return Violation{Property: PropContent, User: user, Room: room, Seq: seq, Detail: detail, TraceLines: lines(evidence...)}
}

// contentOfLogs: every log entry is a message its sender sent, with a
// payload it sent.
func (j *judge) contentOfLogs(sent map[sendKey]*sentPayloads, forged map[sendKey]bool, recorded bool) []Violation {
	var out []Violation
	for _, room := range sortedKeys(j.h.Final.Logs) {
		for _, e := range j.h.Final.Logs[room] {
			k := sendKey{room, e.Sender, e.MsgID}
			s := sent[k]
			switch {
			case s == nil:
				if recorded && e.Payload != 0 && !forged[k] {
					out = append(out, contentViolation(e.Sender, room, e.Seq, fmt.Sprintf(
						"the room log holds %q from %s at seq %d, but %s never sent that id to the room", e.MsgID, e.Sender, e.Seq, e.Sender)))
				}
			case e.Payload != 0 && len(s.digests) > 0 && !containsDigest(s.digests, e.Payload):
				out = append(out, contentViolation(e.Sender, room, e.Seq, fmt.Sprintf(
					"the room log holds payload %s for %q from %s at seq %d, but %s sent it with payload %s",
					digestStr(e.Payload), e.MsgID, e.Sender, e.Seq, e.Sender, digestStr(s.digests[0])), s.lines...))
			}
		}
	}
	return out
}

func containsDigest(ds []uint64, d uint64) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

func digestStr(d uint64) string { return fmt.Sprintf("#%016x", d) }

// contentOfSends: an acked send's seq holds the message it sent, and was
// accepted from a member; a steal is refused only as a non-member's send.
func (j *judge) contentOfSends() []Violation {
	var out []Violation
	for _, ev := range j.h.Events {
		if ev.Kind != KindSend {
			continue
		}
		// NotFound: a room never created (the rapid machine steals into
		// rooms that may not exist yet); InvalidArgument: the request
		// itself (its payload, a name) was refused, whoever's the id.
		// Neither says anything of the id's rule.
		if ev.Steal && !ev.OK && definite[ev.Err] && ev.Err != "FailedPrecondition" && ev.Err != "NotFound" && ev.Err != "InvalidArgument" {
			out = append(out, contentViolation(ev.User, ev.Room, 0, fmt.Sprintf(
				"a send of %q, another user's message id, by %s was refused %s: the id is %s's own (a member's send is sequenced, a non-member's refused FailedPrecondition)",
				ev.MsgID, ev.User, ev.Err, ev.User), ev.TraceLine))
		}
		if !ev.OK || ev.Seq == 0 {
			continue
		}
		if m := j.membership(ev.Room, ev.User); !m.allows(ev.Seq) {
			out = append(out, contentViolation(ev.User, ev.Room, ev.Seq, fmt.Sprintf(
				"the send of %q by %s was acked with seq %d, outside its membership windows %s: a non-member's send was accepted",
				ev.MsgID, ev.User, ev.Seq, formatMembership(m)), ev.TraceLine))
		}
		e, ok := j.logs.entry(ev.Room, ev.Seq)
		if !ok || e.MsgID != ev.MsgID {
			continue // missing or another id: no-loss reports it
		}
		switch {
		case e.Sender != ev.User:
			out = append(out, contentViolation(ev.User, ev.Room, ev.Seq, fmt.Sprintf(
				"the send of %q by %s was acked with seq %d, but the log holds %s's message %q there: the ack names another sender's message",
				ev.MsgID, ev.User, ev.Seq, e.Sender, e.MsgID), ev.TraceLine))
		case ev.Payload != 0 && e.Payload != 0 && ev.Payload != e.Payload:
			out = append(out, contentViolation(ev.User, ev.Room, ev.Seq, fmt.Sprintf(
				"the send of %q by %s with payload %s was acked with seq %d, but the log holds payload %s there",
				ev.MsgID, ev.User, digestStr(ev.Payload), ev.Seq, digestStr(e.Payload)), ev.TraceLine))
		}
	}
	return out
}

// carried is what a delivery carried of its message, for grouping the
// deliveries that differ from the log the same way.
type carried struct {
	room   string
	seq    uint64
	id     string
	sender string
	digest uint64
}

type carriedBy struct {
	users []string
	lines []int
	n     int
	entry LogEntry
}

// contentOfDeliveries: each delivery carries its seq's log entry. The
// deliveries that carry the same wrong content for one seq are one
// violation.
func (j *judge) contentOfDeliveries() []Violation {
	var order []carried
	bad := map[carried]*carriedBy{}
	j.h.EachDelivery(func(ev Event) {
		e, ok := j.logs.entry(ev.Room, ev.Seq)
		if !ok {
			return // not in the log: a stray (CheckNoStray)
		}
		if e.MsgID == ev.MsgID && (ev.Sender == "" || ev.Sender == e.Sender) &&
			(ev.Payload == 0 || e.Payload == 0 || ev.Payload == e.Payload) {
			return
		}
		k := carried{ev.Room, ev.Seq, ev.MsgID, ev.Sender, ev.Payload}
		b := bad[k]
		if b == nil {
			b = &carriedBy{entry: e}
			bad[k] = b
			order = append(order, k)
		}
		b.n++
		if len(b.users) < 8 {
			b.users = append(b.users, ev.User)
			b.lines = append(b.lines, ev.TraceLine)
		}
	})
	var out []Violation
	for _, k := range order {
		b := bad[k]
		out = append(out, contentViolation(b.users[0], k.room, k.seq, fmt.Sprintf(
			"%d deliveries (to %s) carried %s at seq %d, but the log holds %s there",
			b.n, few(b.users), describe(k.id, k.sender, k.digest), k.seq, describe(b.entry.MsgID, b.entry.Sender, b.entry.Payload)), b.lines...))
	}
	return out
}

func describe(id, sender string, digest uint64) string {
	s := fmt.Sprintf("%q", id)
	if sender != "" {
		s += " from " + sender
	}
	if digest != 0 {
		s += " payload " + digestStr(digest)
	}
	return s
}

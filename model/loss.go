package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// CheckNoLoss checks the acknowledged sends against the final room logs.
// A client message id is scoped to its sender, so a message is (sender,
// MsgID): every OK send (Seq > 0, with a MsgID) is in its room log at the
// acked seq with its MsgID; sends of one message acked more than once
// (retries) name one seq; and a message appears at most once in a room
// log. Whose message the acked seq holds, and its payload, is
// CheckContent's.
func CheckNoLoss(h *History) []Violation {
	acks := groupAcks(h.Events)
	x := indexLogs(h.Final)
	var out []Violation
	for _, room := range sortedKeys(acks) {
		for _, k := range sortedMsgs(acks[room]) {
			out = append(out, judgeAcks(h.Final, x, room, k.id, acks[room][k])...)
		}
	}
	return append(out, logDuplicates(h.Final, acks)...)
}

// senderID is a message of a room: its sender and client message id.
type senderID struct{ sender, id string }

// sortedMsgs returns m's messages sorted by sender, then id.
func sortedMsgs[V any](m map[senderID]V) []senderID {
	return slices.SortedFunc(maps.Keys(m), func(a, b senderID) int {
		return cmp.Or(cmp.Compare(a.sender, b.sender), cmp.Compare(a.id, b.id))
	})
}

// groupAcks groups the OK sends by room, then message, in history order.
func groupAcks(events []Event) map[string]map[senderID][]Event {
	acks := map[string]map[senderID][]Event{}
	for _, ev := range events {
		if ev.Kind != KindSend || !ev.OK || ev.Seq == 0 || ev.MsgID == "" {
			continue
		}
		if acks[ev.Room] == nil {
			acks[ev.Room] = map[senderID][]Event{}
		}
		k := senderID{ev.User, ev.MsgID}
		acks[ev.Room][k] = append(acks[ev.Room][k], ev)
	}
	return acks
}

func eventLines(evs []Event) []int {
	ls := make([]int, len(evs))
	for i, ev := range evs {
		ls[i] = ev.TraceLine
	}
	return lines(ls...)
}

// judgeAcks judges the acks of one MsgID in one room. Acks that disagree on
// the seq are one violation; the message is lost only when the log holds it
// at none of the acked seqs, so a conflict is not also reported as a loss.
func judgeAcks(f Final, x logIndex, room, id string, evs []Event) []Violation {
	var seqs []uint64
	for _, ev := range evs {
		seqs = append(seqs, ev.Seq)
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	base := Violation{Property: PropNoLoss, User: evs[0].User, Room: room, TraceLines: eventLines(evs)}
	var out []Violation
	if len(seqs) > 1 {
		v := base
		v.Seq = seqs[1]
		v.Detail = fmt.Sprintf("msgid %q was acked with different seqs %s", id, joinNums(seqs))
		out = append(out, v)
	}
	for _, seq := range seqs {
		if e, ok := x.entry(room, seq); ok && e.MsgID == id {
			return out
		}
	}
	v := base
	v.Seq = seqs[0]
	v.Detail = lossDetail(f, x, room, id, seqs)
	return append(out, v)
}

func lossDetail(f Final, x logIndex, room, id string, seqs []uint64) string {
	if len(seqs) > 1 {
		return fmt.Sprintf("acked send %q is in the room log at none of its acked seqs %s", id, joinNums(seqs))
	}
	e, ok := x.entry(room, seqs[0])
	if !ok {
		return fmt.Sprintf("acked send %q at seq %d is not in the room log (%d entries)",
			id, seqs[0], len(f.Logs[room]))
	}
	return fmt.Sprintf("acked send %q at seq %d but the log holds %q there", id, seqs[0], e.MsgID)
}

// logDuplicates reports messages (sender, MsgID) that appear more than
// once in a room log: a retried send must not append a second entry. The
// same id from two senders is two messages. The evidence is the acks.
func logDuplicates(f Final, acks map[string]map[senderID][]Event) []Violation {
	var out []Violation
	for _, room := range sortedKeys(f.Logs) {
		seqs := map[senderID][]uint64{}
		for _, e := range f.Logs[room] {
			if e.MsgID == "" {
				continue
			}
			k := senderID{e.Sender, e.MsgID}
			seqs[k] = append(seqs[k], e.Seq)
		}
		for _, k := range sortedMsgs(seqs) {
			if s := seqs[k]; len(s) > 1 {
				out = append(out, Violation{
					Property: PropNoLoss, User: k.sender, Room: room, Seq: s[1],
					Detail:     fmt.Sprintf("msgid %q from %s appears %d times in the room log (seqs %s)", k.id, k.sender, len(s), joinNums(s)),
					TraceLines: eventLines(acks[room][k]),
				})
			}
		}
	}
	return out
}

package model

import (
	"fmt"
	"slices"
)

// CheckNoLoss checks the acknowledged sends against the final room logs:
// every OK send (Seq > 0, with a MsgID) is in its room log at the acked seq
// with its MsgID; sends acked more than once for one MsgID (retries) name
// one seq; and a MsgID appears at most once in a room log.
func CheckNoLoss(h *History) []Violation {
	acks := groupAcks(h.Events)
	x := indexLogs(h.Final)
	var out []Violation
	for _, room := range sortedKeys(acks) {
		for _, id := range sortedKeys(acks[room]) {
			out = append(out, judgeAcks(h.Final, x, room, id, acks[room][id])...)
		}
	}
	return append(out, logDuplicates(h.Final, acks)...)
}

// groupAcks groups the OK sends by room, then MsgID, in history order.
func groupAcks(events []Event) map[string]map[string][]Event {
	acks := map[string]map[string][]Event{}
	for _, ev := range events {
		if ev.Kind != KindSend || !ev.OK || ev.Seq == 0 || ev.MsgID == "" {
			continue
		}
		if acks[ev.Room] == nil {
			acks[ev.Room] = map[string][]Event{}
		}
		acks[ev.Room][ev.MsgID] = append(acks[ev.Room][ev.MsgID], ev)
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

// logDuplicates reports MsgIDs that appear more than once in a room log: a
// retried send must not append a second entry. The evidence is the acks.
func logDuplicates(f Final, acks map[string]map[string][]Event) []Violation {
	var out []Violation
	for _, room := range sortedKeys(f.Logs) {
		seqs := map[string][]uint64{}
		senders := map[string]string{}
		for _, e := range f.Logs[room] {
			if e.MsgID == "" {
				continue
			}
			if len(seqs[e.MsgID]) == 0 {
				senders[e.MsgID] = e.Sender
			}
			seqs[e.MsgID] = append(seqs[e.MsgID], e.Seq)
		}
		for _, id := range sortedKeys(seqs) {
			if s := seqs[id]; len(s) > 1 {
				out = append(out, Violation{
					Property: PropNoLoss, User: senders[id], Room: room, Seq: s[1],
					Detail:     fmt.Sprintf("msgid %q appears %d times in the room log (seqs %s)", id, len(s), joinNums(s)),
					TraceLines: eventLines(acks[room][id]),
				})
			}
		}
	}
	return out
}

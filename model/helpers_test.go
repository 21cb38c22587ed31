package model

import (
	"fmt"
	"sort"
)

// logOf builds a room log whose entry i has seq i+1 and MsgID ids[i].
func logOf(ids ...string) []LogEntry {
	out := make([]LogEntry, len(ids))
	for i, id := range ids {
		out[i] = LogEntry{Seq: uint64(i + 1), MsgID: id, Sender: "s"}
	}
	return out
}

// logFrom builds a room log like logOf whose entries all name sender.
func logFrom(sender string, ids ...string) []LogEntry {
	out := logOf(ids...)
	for i := range out {
		out[i].Sender = sender
	}
	return out
}

// withSender sets the sender of seq's entry of log.
func withSender(log []LogEntry, seq uint64, sender string) []LogEntry {
	log[seq-1].Sender = sender
	return log
}

// msgs returns the MsgIDs m1..mn.
func msgs(n int) []string { return names("m", n) }

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

func dlv(line int, user, room string, seq uint64, id string) Event {
	return Event{Kind: KindDeliver, User: user, Room: room, Node: "n1", Seq: seq, MsgID: id, TraceLine: line}
}

func snd(line int, user, room string, seq uint64, id string) Event {
	return Event{Kind: KindSend, User: user, Room: room, Node: "n1", Seq: seq, MsgID: id, OK: true, TraceLine: line}
}

// join and leave are acked membership calls at trace line `line`
// (invoked and completed at that line).
func join(line int, user, room string, from uint64) Event {
	return Event{Kind: KindJoin, User: user, Room: room, Node: "n1", Seq: from, OK: true, TraceLine: line, InvokedLine: line}
}

func leave(line int, user, room string, to uint64) Event {
	return Event{Kind: KindLeave, User: user, Room: room, Node: "n1", Seq: to, OK: true, TraceLine: line, InvokedLine: line}
}

// withWindows puts the join and leave acks that give windows in room
// before events, at time -1: the membership derivation follows a user's
// calls in history order, and the delivery checkers do not look at times.
// (CheckWindows does: its tests build their acks by hand.)
func withWindows(room string, windows map[string][]Window, events ...Event) []Event {
	users := make([]string, 0, len(windows))
	for u := range windows {
		users = append(users, u)
	}
	sort.Strings(users)
	var out []Event
	for _, u := range users {
		for _, w := range windows[u] {
			j := join(0, u, room, w.From)
			j.Time, j.Invoked = -1, -1
			out = append(out, j)
			if w.To != 0 {
				l := leave(0, u, room, w.To)
				l.Time, l.Invoked = -1, -1
				out = append(out, l)
			}
		}
	}
	return append(out, events...)
}

// oneRoom is a history of room r1 with the given log and windows.
func oneRoom(log []LogEntry, windows map[string][]Window, events ...Event) *History {
	return &History{
		Mode:   "bulk",
		Events: withWindows("r1", windows, events...),
		Final:  Final{Logs: map[string][]LogEntry{"r1": log}},
	}
}

// open is a single open window from seq 1.
var open = []Window{{From: 1}}

package model

import "fmt"

// logOf builds a room log whose entry i has seq i+1 and MsgID ids[i].
func logOf(ids ...string) []LogEntry {
	out := make([]LogEntry, len(ids))
	for i, id := range ids {
		out[i] = LogEntry{Seq: uint64(i + 1), MsgID: id, Sender: "s"}
	}
	return out
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

// oneRoom is a history of room r1 with the given log and windows.
func oneRoom(log []LogEntry, windows map[string][]Window, events ...Event) *History {
	return &History{
		Mode:   "bulk",
		Events: events,
		Final: Final{
			Logs:    map[string][]LogEntry{"r1": log},
			Windows: map[string]map[string][]Window{"r1": windows},
		},
	}
}

// open is a single open window from seq 1.
var open = []Window{{From: 1}}

package model

import (
	"fmt"
	"time"
)

// LogReads is what the harness saw of one node's reads of room logs, at
// its Redis gate: the largest reply one LRANGE of a room log brought back.
// A replay or a gap fill holds what it read until it has pushed it, so the
// largest reply is the most log a fill held at once.
type LogReads struct {
	Node string
	// Page is the node's configured ReplayPage (the most entries a fill
	// may read at once), read from the configuration the harness started
	// the node with, never from its messages; 0: unknown, not judged.
	Page int
	// Reads counts the node's LRANGE commands on room logs.
	Reads int
	// MaxEntries is the most entries one reply held (MaxBytes their
	// size), first reached at At, reading Room.
	MaxEntries int
	MaxBytes   int
	At         time.Duration
	Room       string
}

// CheckReplayMemory is bounded-replay-memory: what a replay or catch-up
// holds is bounded by the outbox and one page of the log, never by the
// backlog. Counted from outside (h.LogReads): no single read of a room
// log may bring back more entries than the node's configured page, so a
// client with a long history costs its node no more than a page (plus its
// outbox) whatever the length of that history.
func CheckReplayMemory(h *History) []Violation {
	var out []Violation
	for _, r := range h.LogReads {
		if r.Page > 0 && r.MaxEntries > r.Page {
			out = append(out, Violation{Property: PropReplayMemory, Node: r.Node, Room: r.Room,
				Detail: fmt.Sprintf("node %s read %d entries (%d bytes) of room %s's log at once at t=%v, over its configured replay page of %d: a fill holds the backlog, not a page",
					r.Node, r.MaxEntries, r.MaxBytes, r.Room, r.At, r.Page)})
		}
	}
	return out
}

package model

import (
	"fmt"
	"time"
)

// BadNodeStart is the harness's attempt to build a node whose id no valid
// node id looks like ('@' or ':' in it, a space, a format character,
// empty, over-long): what it tried and what the relay answered.
type BadNodeStart struct {
	ID string
	At time.Duration
	// Started: the relay accepted the configuration (the harness killed
	// the node at once); Err is its refusal otherwise.
	Started   bool
	Err       string
	TraceLine int
}

// CheckBadNodeIDs judges the harness's attempts to start a node with a
// malformed id: each must be refused. A node id is cut out of route
// values at its first '@' and is part of Redis keys whose separator is
// ':', so a node that starts under such an id registers, but its users'
// routes name another node (or none): every relay to them is lost.
func CheckBadNodeIDs(h *History) []Violation {
	var out []Violation
	for _, b := range h.BadNodeStarts {
		if b.Started {
			out = append(out, Violation{Property: PropBadNodeIDs, Node: fmt.Sprintf("%q", b.ID),
				Detail: fmt.Sprintf("a node with the malformed id %q was accepted at %s; it must be refused at start-up", b.ID, b.At), TraceLines: lines(b.TraceLine)})
		}
	}
	return out
}

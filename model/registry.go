package model

import (
	"fmt"
	"time"
)

// RegistryWrite is one command an incarnation of Node (epoch Writer) ran
// on the node's registry entry while the entry named a newer epoch
// (Before > Writer), with the entry's epoch just after it (After; 0: no
// entry), as the harness read the entry from Redis around the command.
type RegistryWrite struct {
	At      time.Duration
	Node    string
	Writer  uint64
	Before  uint64
	After   uint64
	Command string
}

// CheckRegistry is newest-registration-kept: a node's registry entry that
// names a newer incarnation is never overwritten or removed by an older
// one (a superseded incarnation's heartbeat or deregister during an
// overlapping restart): the live node would be unregistered, and relays
// to it dropped, until its next heartbeat.
func CheckRegistry(h *History) []Violation {
	var out []Violation
	for _, w := range h.Registry {
		if w.Before <= w.Writer || w.After == w.Before {
			continue
		}
		what := fmt.Sprintf("put its epoch %d back", w.After)
		if w.After == 0 {
			what = "removed it"
		}
		out = append(out, Violation{Property: PropRegistry, Node: w.Node,
			Detail: fmt.Sprintf("at t=%v %s's incarnation of epoch %d ran %s on the registry entry of its newer incarnation (epoch %d) and %s",
				w.At, w.Node, w.Writer, w.Command, w.Before, what)})
	}
	return out
}

package scenarios

import (
	"fmt"
	"strings"
)

// handleMetrics prints one node seen from outside: its executor (live
// workers, peak, busy, queued, tasks completed and run by their caller),
// its sessions and open client streams (counted from gRPC's stats, not the
// node's word), its connections to peers and its goroutines (by label).
//
// Example:
//
//	metrics node=n1
func (e *Env) handleMetrics(a *args) (string, error) {
	i := a.node("node", true)
	if a.err != nil {
		return "", nil
	}
	s := e.c.NodeStats(i)
	if !s.Up {
		return s.ID + " down\n", nil
	}
	return fmt.Sprintf("%s pool=%d peak=%d busy=%d queued=%d tasks=%d caller-runs=%d\n%s sessions=%d streams=%d peer-conns=%d goroutines=%d\n",
		s.ID, s.Pool, s.Peak, s.Active, s.Queued, s.Completed, s.CallerRuns,
		strings.Repeat(" ", len(s.ID)), s.Sessions, s.Streams, s.PeerConns, s.Goroutines), nil
}

// handleTrace prints the last lines of the run's trace (virtual time,
// node, what happened; every scheduled operation is a line), for a reader
// who wants to see how a moment of the story came about.
//
// Example:
//
//	trace last=20
func (e *Env) handleTrace(a *args) (string, error) {
	n := a.integer("last", 20)
	if a.err != nil {
		return "", nil
	}
	lines := e.c.Trace.Numbered()
	return strings.Join(lines[max(0, len(lines)-n):], "\n") + "\n", nil
}

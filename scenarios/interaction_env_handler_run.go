package scenarios

import (
	"fmt"
	"strings"

	"github.com/relaysim/relaysim/model"
)

// handleRun lets virtual time pass and tells what happened meanwhile: what
// the clients received ("u2 <- r1#3 hello (live)", or "(log)" when
// replayed from the room log), acks that came in, sessions closed,
// relays that failed or were retried, and faults that hit single calls.
// It ends with a sample of every node for the stream and worker checks.
//
// Example:
//
//	run for=5s
func (e *Env) handleRun(a *args) (string, error) {
	d := a.duration("for", true)
	if a.err != nil {
		return "", nil
	}
	e.c.Sched.RunFor(d)
	e.c.Sample(false, true)
	return e.news(), nil
}

// handleCheck judges the history so far by every property of model.Check
// (all but mode equivalence, which the harness shows by running the file
// in every mode): "ok", or the violations, at most five per property.
// Calls still in flight count as of unknown outcome. Exactly-once is owed
// to every member, so check after everybody is connected and the cluster
// had time to drain.
//
// Example:
//
//	check
func (e *Env) handleCheck(*args) (string, error) {
	e.c.Sample(false, true)
	h, err := e.c.Snapshot()
	if err != nil {
		return "", fmt.Errorf("check: read the room logs: %w", err)
	}
	byProp := map[string][]model.Violation{}
	for _, v := range model.Check(h) {
		byProp[v.Property] = append(byProp[v.Property], v)
	}
	var b strings.Builder
	b.WriteString(e.news())
	for _, p := range model.Properties {
		if p == model.PropModeEquivalence {
			continue
		}
		vs := byProp[p]
		if len(vs) == 0 {
			fmt.Fprintf(&b, "%s: ok\n", p)
			continue
		}
		fmt.Fprintf(&b, "%s: %d violations\n", p, len(vs))
		for _, v := range vs[:min(5, len(vs))] {
			fmt.Fprintf(&b, "  %s\n", v)
		}
	}
	return b.String(), nil
}

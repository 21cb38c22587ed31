package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/relaysim/relaysim/model"
)

// Banner renders a failed run for a human: seed, mode, scheduler, fault
// mix, cost model, the violated properties with evidence, the last trace
// lines and the one command that replays it.
func Banner(r *Result, replay, commit string) string {
	var b strings.Builder
	c := r.Config
	line := strings.Repeat("=", 78)
	fmt.Fprintln(&b, line)
	fmt.Fprintf(&b, "relaysim FAILED  seed=%s mode=%s scheduler=%s\n", c.Seed, c.Mode, c.Scheduler)
	fmt.Fprintf(&b, "faults: %s\n", r.Mix)
	fmt.Fprintf(&b, "cost:   %s\n", r.Cost)
	if r.Err != nil {
		fmt.Fprintf(&b, "error:  %v\n", r.Err)
	}
	if r.BubbleErr != nil {
		fmt.Fprintf(&b, "bubble: %v\n", r.BubbleErr)
	}
	shown := BannerViolations(r.Violations, 10)
	for _, v := range shown {
		fmt.Fprintf(&b, "violated: %s\n", v)
	}
	if more := len(r.Violations) - len(shown); more > 0 {
		fmt.Fprintf(&b, "... and %d more violations\n", more)
	}
	if r.Trace != nil {
		fmt.Fprintln(&b, "last trace lines:")
		for _, l := range r.Trace.Tail(30) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintf(&b, "trace-hash %s\n", r.TraceHash)
	fmt.Fprintf(&b, "replay:  %s\n", replay)
	fmt.Fprintf(&b, "note:    a seed belongs to its commit (%s); on another commit it may run differently.\n", commit)
	fmt.Fprintln(&b, line)
	return b.String()
}

// BannerViolations picks the violations a banner prints: the first most,
// plus the first of every property not among them, so that a flood of one
// property never hides that another failed too (the mutant catalog judges
// a run by the properties its banner names).
func BannerViolations(vs []model.Violation, most int) []model.Violation {
	out := slices.Clone(vs[:min(most, len(vs))])
	seen := map[string]bool{}
	for _, v := range out {
		seen[v.Property] = true
	}
	for _, v := range vs[len(out):] {
		if !seen[v.Property] {
			seen[v.Property] = true
			out = append(out, v)
		}
	}
	return out
}

package main

import (
	"bytes"
	"io"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// An iterated search's report: a line per bound, the smallest bound at
// which a violation appears, and the same in the JSON (bounds[],
// smallest_violating_bound); a violation the PCT fallback found is
// reported as not exhausted, with its replay command like any other.
func TestExploreIterateReport(t *testing.T) {
	o := scenarios.DefaultExploreOptions()
	o.Bound, o.Iterate = 3, true
	bound := func(b, schedules, failing int, exhausted bool) *scenarios.ExploreReport {
		ob := o
		ob.Bound = b
		r := &scenarios.ExploreReport{Mode: system.ModeBulk, Opts: ob, Schedules: schedules, Terminal: map[string]bool{"a": true}, Exhausted: exhausted, Failing: failing, BoundHit: 2}
		return r
	}
	it := dst.Iteration{Smallest: 2, End: "violation", Runs: []dst.BoundRun{{Bound: 0, Schedules: 2, Exhausted: true, Refused: 2}, {Bound: 1, Schedules: 5, Exhausted: true, Refused: 2}, {Bound: 2, Schedules: 9, Violations: 1, Exhausted: true}}}
	v := scenarios.ExploreViolation{Schedule: []string{"k1", "k2"}, Violations: []model.Violation{{Property: model.PropNoLoss, Detail: "lost"}}}
	r := &scenarios.ExploreReport{Mode: system.ModeBulk, Opts: o, Schedules: 16, Terminal: map[string]bool{"a": true, "b": true}, Failing: 1, FirstViolation: 12,
		Violations: []scenarios.ExploreViolation{v}, Iteration: &it, Bounds: []*scenarios.ExploreReport{bound(0, 2, 0, true), bound(1, 5, 0, true), bound(2, 9, 1, true)}, Exhausted: true}
	var out bytes.Buffer
	code := exploreVerdict([]*scenarios.ExploreReport{r}, "story:x", "", "x", newFlagSet("explore"), t.TempDir(), "", "", "bulk", 12, &out, io.Discard)
	assert.Equal(t, exitFail, code)
	for _, want := range []string{
		"bound=iterated 0..3 budgets: no faults\n",
		"bound 0: schedules 2 (redundant 0), terminal states 1, max depth 0, cut by the bound 2, by the budgets 0, exhausted: yes, violations: 0\n",
		"bound 2: schedules 9 (redundant 0), terminal states 1, max depth 0, cut by the bound 2, by the budgets 0, exhausted: yes, violations: 1\n",
		"smallest bound with a violation: 2 (no violation at bounds 0..1, exhausted: 0=yes 1=yes)\n",
		"schedules over the bounds: 16 (a bound runs again what the bounds below it ran), terminal states: 2, max depth: 0\n",
		`"bound":"0..3"`, `"smallest_violating_bound":2`, `"iteration_end":"violation"`,
		`"bounds":[{"bound":0,"schedules":2,"terminal":1,"max_depth":0,"exhausted":true,"failing":0,"cut":{"bound":2,"budgets":{},"depth":0,"horizon":0}},`,
		"explore: 16 schedules, terminal states bulk=2, exhausted=yes, violations=1\n",
	} {
		assert.Contains(t, out.String(), want)
	}

	// The fallback: the search stopped at its limit, PCT found the
	// violation; never exhausted, and the schedule has its replay line.
	o.Iterate, o.Limit = false, 4
	s := &scenarios.ExploreReport{Mode: system.ModeSingle, Opts: o, Schedules: 4, Terminal: map[string]bool{"a": true}, StoppedBy: "limit", Failing: 1, FirstViolation: 7,
		Violations: []scenarios.ExploreViolation{v}, Sampled: &scenarios.SampleReport{Fallback: dst.Fallback{StoppedAt: 4, Sampled: 10, Violations: 1, Depth: 3, Seed: 0x2a}, Terminal: 2, New: 1}}
	out.Reset()
	dir := t.TempDir()
	code = exploreVerdict([]*scenarios.ExploreReport{s}, "story:x", "", "x", newFlagSet("explore"), dir, "", "", "single", 7, &out, io.Discard)
	assert.Equal(t, exitFail, code)
	for _, want := range []string{
		"stopped by the schedule limit (4)\n",
		"not exhausted: the search was stopped at 4 schedules; PCT sampled 10 more schedules (depth 3, seed 0x2a): violations 1\n",
		"PCT terminal states: 2, not reached by the search: 1, with a fault: 0\n",
		"exhausted: no, violations: 1\n",
		"-schedule " + dir + "/explore-story-x-single-1.schedule",
		`"fallback":{"method":"pct","depth":3,"seed":"0x2a","stopped_at":4,"schedules":10,"failing":1,"terminal":2,"new":1,"faults":0}`,
		`"first_violation":7`,
		"explore: 14 schedules, terminal states single=1, exhausted=no, violations=1\n",
	} {
		assert.Contains(t, out.String(), want)
	}
	assert.NotContains(t, out.String(), "exhausted=yes")
}

// The runner on a small story: -iterate searches bounds 0..2 (the
// story's own bound=2) and says no bound found a violation; with -limit
// the iteration is stopped, -pct samples on, and the output says so and
// is the same, byte for byte, when run again.
func TestExploreIterateCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildRunner(t)
	runIt := func(args ...string) string {
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append([]string{"explore", "-story", "send-races-join", "-mode", "bulk", "-out", t.TempDir()}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Run(), "stderr: %s", errb.String())
		return out.String()
	}
	text := runIt("-iterate")
	for _, want := range []string{
		"bound=iterated 0..2 budgets: no faults\n", "\nbound 0: schedules ", "\nbound 1: schedules ", "\nbound 2: schedules ",
		"no violation at bounds 0..2 (exhausted: 0=yes 1=yes 2=yes)\n", `"iteration_end":"top"`,
	} {
		assert.Contains(t, text, want)
	}
	assert.Regexp(t, exploreSummary, finalLine(text))
	assert.Contains(t, finalLine(text), "exhausted=yes, violations=0")
	// The last bound's search is the plain search at that bound.
	plain := runIt("-bound", "2")
	m := regexp.MustCompile(`(?m)^schedules: (\d+) \(redundant 0\)`).FindStringSubmatch(plain)
	require.NotNil(t, m, "the plain search's schedules line: %s", plain)
	assert.Contains(t, text, "bound 2: schedules "+m[1]+" (redundant 0)")

	args := []string{"-iterate", "-limit", "5", "-pct", "6", "-drops", "1"}
	stopped := runIt(args...)
	for _, want := range []string{
		"bound 1 was stopped (limit)", "stopped by the schedule limit (5)\n",
		"not exhausted: the search was stopped at 5 schedules; PCT sampled 6 more schedules (depth 3, seed 0x2a): violations 0\n",
		`"fallback":{"method":"pct","depth":3,"seed":"0x2a","stopped_at":5,"schedules":6,`,
	} {
		assert.Contains(t, stopped, want)
	}
	assert.Contains(t, finalLine(stopped), "explore: 11 schedules, terminal states bulk=")
	assert.Contains(t, finalLine(stopped), "exhausted=no, violations=0")
	assert.Equal(t, stopped, runIt(args...), "the same flags, the same output")
}

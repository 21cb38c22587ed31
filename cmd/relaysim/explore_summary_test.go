package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/system"
)

// explore's JSON summary line comes just before its last line; it names
// the violated properties and the schedules until the first violation,
// and each search's settings and cuts. Terminal states are per search,
// never summed across modes.
func TestExploreSummaryLine(t *testing.T) {
	fail := &scenarios.ExploreReport{Mode: system.ModeSingle, Schedules: 7, Terminal: map[string]bool{"a": true, "b": true},
		Failing: 1, Violations: []scenarios.ExploreViolation{{Schedule: []string{"k1"}, Violations: []model.Violation{{Property: model.PropNoLoss, Detail: "lost"}}}}}
	ok := &scenarios.ExploreReport{Mode: system.ModeBulk, Schedules: 3, Terminal: map[string]bool{"a": true}, Exhausted: true}
	var out bytes.Buffer
	fs := newFlagSet("explore")
	code := exploreVerdict([]*scenarios.ExploreReport{ok, fail}, "story:x", "", "x", fs, t.TempDir(), "", "", "all", 5, &out, io.Discard)
	if code != exitFail {
		t.Fatalf("exit %d, want %d", code, exitFail)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	last, sum := lines[len(lines)-1], lines[len(lines)-2]
	if last != "explore: 10 schedules, terminal states bulk=1 single=2, exhausted=no, violations=1" {
		t.Errorf("last line %q", last)
	}
	s := summaryOf(sum)
	if s == nil || s.Summary != classViolation || s.Exit != exitFail || s.Command != "explore" || strings.Join(s.Violations, ",") != model.PropNoLoss || !strings.Contains(s.Replay, "-schedule ") {
		t.Errorf("summary line %q", sum)
	}
	for _, want := range []string{`"schedules":10`, `"terminal":{"bulk":1,"single":2}`, `{"search":"single","bound":"0","budgets":{},"horizon":"0s","schedules":7,"terminal":2,"max_depth":0,"exhausted":false,"cut":{"bound":0,"budgets":{},"depth":0,"horizon":0},"probes":{}}`, `"exhausted":false`, `"first_violation":5`} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary line %q lacks %s", sum, want)
		}
	}
}

// The summary names the bound, each budget and what each cut, and why a
// search stopped.
func TestExploreSummarySaysWhatWasCut(t *testing.T) {
	o := scenarios.DefaultExploreOptions()
	o.Bound, o.Budget, o.Limit = 1, map[string]int{"drop": 1, "crash": 0}, 9
	r := &scenarios.ExploreReport{Mode: system.ModeStream, Opts: o, Schedules: 9, Terminal: map[string]bool{"a": true}, MaxDepth: 12,
		BoundHit: 4, BudgetHit: 2, BudgetHitBy: map[string]int{"drop": 2}, HorizonCut: 1, HorizonCutBy: map[string]int{"relay timers": 1}, StoppedBy: "limit", Probes: map[string]int{"session.gap-in-known-room": 3}, Overridden: []string{"bound=0 (fixed: 1)"}}
	var out bytes.Buffer
	exploreVerdict([]*scenarios.ExploreReport{r}, "story:x", "", "x", newFlagSet("explore"), t.TempDir(), "", "", "stream", 0, &out, io.Discard)
	for _, want := range []string{
		"bound=1 budgets: drop=1\n", "the command line overrides the story's bound=0 (fixed: 1)\n",
		"cut by each budget: drop=2\n", "probes hit (schedules): 1 of 75: session.gap-in-known-room=3\n", "cut by the horizon (3s) with work pending: 1 (relay timers 1)\n", "stopped by the schedule limit (9)\n",
		`"searches":[{"search":"stream","bound":"1","budgets":{"drop":1},"horizon":"3s","limit":9,"schedules":9,"terminal":1,"max_depth":12,"exhausted":false,"cut":{"bound":4,"budgets":{"drop":2},"depth":0,"horizon":1,"horizon_by":{"relay_timers":1}},"stopped_by":"limit","overridden":["bound=0 (fixed: 1)"],"probes":{"session.gap-in-known-room":3}}],"probes":{"session.gap-in-known-room":3}`,
		"explore: 9 schedules, terminal states stream=1, exhausted=no, violations=0\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

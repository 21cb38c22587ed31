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

// explore's JSON summary line comes just before its last line, which
// stays as it was; it names the violated properties and the schedules
// until the first violation.
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
	if last != "explore: 10 schedules, 3 terminal states, exhausted=no, violations=1" {
		t.Errorf("last line %q", last)
	}
	s := summaryOf(sum)
	if s == nil || s.Summary != classViolation || s.Exit != exitFail || s.Command != "explore" || strings.Join(s.Violations, ",") != model.PropNoLoss || !strings.Contains(s.Replay, "-schedule ") {
		t.Errorf("summary line %q", sum)
	}
	for _, want := range []string{`"schedules":10`, `"terminal":3`, `"exhausted":false`, `"first_violation":5`} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary line %q lacks %s", sum, want)
		}
	}
}

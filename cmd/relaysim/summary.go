package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// The verdict classes of a run, in its exit code and in its summary line,
// so that tooling (the mutant catalog, CI) never scrapes banner text:
//
//   - exitOK (0): every property held.
//   - exitFail (1), "violation": a property was violated. Goroutines left
//     after teardown are one (goroutine-leak): the goroutines are the
//     relay's, and the oracle judges them like any other evidence. A run
//     that both violated a property and broke down is a violation: what it
//     found is evidence whatever else went wrong.
//   - exitUsage (2): a bad command line; nothing ran, no summary line.
//   - exitHarness (3), "harness-error": the run did not complete, so it
//     judged nothing: the cluster did not start, the bubble deadlocked, the
//     harness caught itself in a bug, the history could not be written; for
//     a sweep also a job that hung (-job-timeout) or whose process died.
//
// A process the Go runtime kills (a panic outside the relay's recovered
// tasks, a fatal error) exits 2 and prints no summary line: that missing
// line, not the code, tells it from bad usage.
const exitHarness = 3

// Summary classes.
const (
	classOK        = "ok"
	classViolation = "violation"
	classHarness   = "harness-error"
)

// runSummary is the one JSON line `run`, `replay` and `equiv` print just
// before their last line (trace-hash: / equiv-hashes:), e.g.
//
//	{"summary":"violation","exit":1,"command":"run","seed":"0x2a","mode":"bulk","violations":["per-room-ordering"],"trace_hash":"..."}
//
// mutants.Summary reads it back.
type runSummary struct {
	Summary    string   `json:"summary"` // classOK, classViolation or classHarness
	Exit       int      `json:"exit"`
	Command    string   `json:"command"`
	Seed       string   `json:"seed"`
	Mode       string   `json:"mode"`             // "all" for equiv
	Violations []string `json:"violations"`       // the violated properties, in order of first appearance
	Error      string   `json:"error,omitempty"`  // what stopped the run (harness-error)
	TraceHash  string   `json:"trace_hash"`       // equiv: every mode's, space-separated
	Replay     string   `json:"replay,omitempty"` // the command that runs it again, when it failed
	// Coverage is how often the run met each part of the widened world
	// (sim.Coverage.Items; run and replay only).
	Coverage map[string]int `json:"coverage,omitempty"`
}

// exitCode classifies a finished run.
func exitCode(r *sim.Result) int {
	switch {
	case len(r.Violations) > 0:
		return exitFail
	case r.Err != nil || r.BubbleErr != nil:
		return exitHarness
	}
	return exitOK
}

// classOf names an exit code's class.
func classOf(code int) string {
	switch code {
	case exitOK:
		return classOK
	case exitFail:
		return classViolation
	}
	return classHarness
}

// runError is what stopped a run, "" when it completed.
func runError(r *sim.Result) string {
	switch {
	case r.Err != nil && r.BubbleErr != nil:
		return r.Err.Error() + "; bubble: " + r.BubbleErr.Error()
	case r.Err != nil:
		return r.Err.Error()
	case r.BubbleErr != nil:
		return "bubble: " + r.BubbleErr.Error()
	}
	return ""
}

// propertiesOf lists the properties vs violate, in order of first
// appearance.
func propertiesOf(vs []model.Violation) []string {
	props := []string{}
	for _, v := range vs {
		if !slices.Contains(props, v.Property) {
			props = append(props, v.Property)
		}
	}
	return props
}

// printSummary writes the summary line of one run.
func printSummary(w io.Writer, command string, r *sim.Result, code int, replay string) {
	s := runSummary{
		Summary: classOf(code), Exit: code, Command: command,
		Seed: r.Config.Seed.String(), Mode: string(r.Config.Mode),
		Violations: propertiesOf(r.Violations), Error: runError(r), TraceHash: r.TraceHash,
	}
	if code != exitOK {
		s.Replay = replay
	}
	if r.History != nil {
		s.Coverage = map[string]int{}
		for _, it := range r.Coverage.Items() {
			s.Coverage[it.Name] = it.Count
		}
	}
	writeSummary(w, s)
}

func writeSummary(w io.Writer, s runSummary) {
	js, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("summary line: %v", err)) // plain strings: cannot fail
	}
	fmt.Fprintf(w, "%s\n", js)
}

// summaryOf reads the summary line back from a run's output (nil: none).
func summaryOf(out string) *runSummary {
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, `{"summary":`) {
			continue
		}
		var s runSummary
		if json.Unmarshal([]byte(l), &s) == nil {
			return &s
		}
	}
	return nil
}

// coverageLine is a run's coverage line: each count of sim.Coverage.Items.
func coverageLine(c sim.Coverage) string {
	var parts []string
	for _, it := range c.Items() {
		parts = append(parts, fmt.Sprintf("%s=%d", it.Name, it.Count))
	}
	return strings.Join(parts, " ")
}

// sweepCoverage tallies how many of a sweep's runs met each part of the
// widened world, from their summary lines, in Items order.
func sweepCoverage(jobs []*sweepJob) string {
	var names []string
	for _, it := range (sim.Coverage{}).Items() {
		names = append(names, it.Name)
	}
	met := map[string]int{}
	runs := 0
	for _, j := range jobs {
		s := summaryOf(j.out)
		if s == nil || s.Coverage == nil {
			continue
		}
		runs++
		for name, n := range s.Coverage {
			if n > 0 {
				met[name]++
			}
		}
	}
	if runs == 0 {
		return ""
	}
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %d", name, met[name])
	}
	return fmt.Sprintf("coverage: of %d runs, met: %s", runs, strings.Join(parts, ", "))
}

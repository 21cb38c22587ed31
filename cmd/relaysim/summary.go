package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/relaysim/relaysim/internal/proc"

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
	// Evidence is a failed run's first lines as its banner shows them, in
	// its order: "error:  ..." and "bubble: ..." for a run that did not
	// complete, and for each violated property its first "violated: ..."
	// line. A parent quotes them (sweep's FAIL lines, JUnit, the mutant
	// catalog) instead of reading the banner.
	Evidence []string `json:"evidence,omitempty"`
	// Coverage is how often the run met each part of the widened world
	// (sim.Coverage.Items; run and replay only).
	Coverage map[string]int `json:"coverage,omitempty"`
	// Probes counts the relay's code probes the run hit, by name (only
	// those hit; sim.Result.Probes; run and replay, and equiv: its runs'
	// sum). The sweep tallies them (probes.go).
	Probes map[string]int `json:"probes,omitempty"`
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
		s.Evidence = evidenceOf(nil, r)
	}
	if r.History != nil {
		s.Coverage = map[string]int{}
		for _, it := range r.Coverage.Items() {
			s.Coverage[it.Name] = it.Count
		}
	}
	s.Probes = r.Probes
	writeSummary(w, s)
}

func writeSummary(w io.Writer, s runSummary) {
	js, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("summary line: %v", err)) // plain strings: cannot fail
	}
	fmt.Fprintf(w, "%s\n", js)
	noteSummary(js)
}

// lastSummary is the summary line this process wrote last: a sweep
// worker hands it to its parent as the job's typed result (worker.go).
var lastSummary atomic.Pointer[[]byte]

// noteSummary keeps a summary line just written (lastSummary) and, in a
// child of a fan-out, writes it to the result file its parent named
// (proc.WriteResult): the parent reads that, never the printed text.
func noteSummary(js []byte) {
	lastSummary.Store(&js)
	if err := proc.WriteResult(json.RawMessage(js)); err != nil {
		fmt.Fprintf(os.Stderr, "relaysim: result file: %v\n", err)
	}
}

// evidenceOf adds to ev the evidence lines (runSummary.Evidence) of the
// failed runs rs, in the order their banners print them; a property
// already named keeps its first line.
func evidenceOf(ev []string, rs ...*sim.Result) []string {
	for _, r := range rs {
		if !r.Failed() {
			continue
		}
		if r.Err != nil {
			ev = append(ev, strings.TrimSpace(fmt.Sprintf("error:  %v", r.Err)))
		}
		if r.BubbleErr != nil {
			ev = append(ev, strings.TrimSpace(fmt.Sprintf("bubble: %v", r.BubbleErr)))
		}
		ev = violatedLines(ev, sim.BannerViolations(r.Violations, 10))
	}
	return ev
}

// violatedLines adds the first "violated: " line of each property of vs
// that ev does not name yet.
func violatedLines(ev []string, vs []model.Violation) []string {
	for _, v := range vs {
		prefix := "violated: " + v.Property + ":"
		if !slices.ContainsFunc(ev, func(l string) bool { return strings.HasPrefix(l, prefix) }) {
			ev = append(ev, strings.TrimSpace("violated: "+v.String()))
		}
	}
	return ev
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
		s := j.summary
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

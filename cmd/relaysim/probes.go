package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/relaysim/relaysim/internal/proc"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// Code probes in the CLI: each run's summary lists the probes it hit
// (runSummary.Probes); a sweep tallies the runs that hit each probe from
// its children's typed summaries, names those never hit, and with
// -require-probes fails when a required one was never hit.

// sumProbes adds up the probes of runs (nil: none hit).
func sumProbes(runs ...*sim.Result) map[string]int {
	var out map[string]int
	for _, r := range runs {
		for name, n := range r.Probes {
			if out == nil {
				out = map[string]int{}
			}
			out[name] += n
		}
	}
	return out
}

// probeNames are the registered probes' names, in registry order.
func probeNames() []string {
	var names []string
	for _, p := range system.Probes() {
		names = append(names, p.Name)
	}
	return names
}

// parseRequireProbes reads -require-probes: "" (none), "all", or a
// comma-separated list of registered probe names.
func parseRequireProbes(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	known := probeNames()
	if s == "all" {
		return known, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("-require-probes: unknown probe %q (docs/probes.md lists them)", name)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-require-probes: no probe named (want all or a comma-separated list)")
	}
	return out, nil
}

// probeTally is how many of a sweep's runs (with a summary) hit each
// probe.
type probeTally struct {
	runs int
	hit  map[string]int
}

func tallyProbes(jobs []*sweepJob) probeTally {
	t := probeTally{hit: map[string]int{}}
	for _, j := range jobs {
		if j.summary == nil {
			continue
		}
		t.runs++
		for name, n := range j.summary.Probes {
			if n > 0 {
				t.hit[name]++
			}
		}
	}
	return t
}

// never lists the registered probes no run hit, in registry order.
func (t probeTally) never() []string {
	var out []string
	for _, name := range probeNames() {
		if t.hit[name] == 0 {
			out = append(out, name)
		}
	}
	return out
}

// print writes the sweep's probe block: each probe hit with its count of
// runs (registry order), then "probes: H/N hit" and the never-hit line.
func (t probeTally) print(w io.Writer) {
	if t.runs == 0 {
		return
	}
	names := probeNames()
	var hit []string
	for _, name := range names {
		if n := t.hit[name]; n > 0 {
			hit = append(hit, fmt.Sprintf("%s %d", name, n))
		}
	}
	fmt.Fprintf(w, "probes hit, of %d runs:\n", t.runs)
	for i := 0; i < len(hit); i += 4 {
		fmt.Fprintf(w, "  %s\n", strings.Join(hit[i:min(i+4, len(hit))], ", "))
	}
	never := t.never()
	fmt.Fprintf(w, "probes: %d/%d hit\n", len(names)-len(never), len(names))
	if len(never) > 0 {
		fmt.Fprintf(w, "never hit: %s\n", strings.Join(never, ", "))
	}
}

// probeFile holds a sweep's probe tally beside its coverage counters
// (-cover DIR), for relaysim cover to merge.
const probeFile = "probes.json"

type savedTally struct {
	Runs int            `json:"runs"`
	Hit  map[string]int `json:"hit"`
}

// save writes the tally into a -cover data directory.
func (t probeTally) save(data string) error {
	js, err := json.Marshal(savedTally{Runs: t.runs, Hit: t.hit})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(data, probeFile), js, 0o644)
}

// mergeTallies sums the tallies saved in data directories; ok is false
// unless every one holds a tally (a run or an explore saves none: their
// probes are in their summary lines), so that a merged share never
// claims a whole it did not see.
func mergeTallies(data []string) (t probeTally, ok bool, err error) {
	t = probeTally{hit: map[string]int{}}
	for _, d := range data {
		js, err := os.ReadFile(filepath.Join(d, probeFile))
		if errors.Is(err, fs.ErrNotExist) {
			return t, false, nil
		}
		if err != nil {
			return t, false, err
		}
		var st savedTally
		if err := json.Unmarshal(js, &st); err != nil {
			return t, false, fmt.Errorf("%s: %w", filepath.Join(d, probeFile), err)
		}
		t.runs += st.Runs
		for name, n := range st.Hit {
			t.hit[name] += n
		}
	}
	return t, len(data) > 0, nil
}

// share is "probes H/N": how many of the registered probes some run hit
// ("" when no run reported).
func (t probeTally) share() string {
	if t.runs == 0 {
		return ""
	}
	n := len(probeNames())
	return fmt.Sprintf("probes %d/%d", n-len(t.never()), n)
}

// unhitRequired are the required probes no run hit, in the order given.
func (t probeTally) unhitRequired(required []string) []string {
	var out []string
	for _, name := range required {
		if t.hit[name] == 0 {
			out = append(out, name)
		}
	}
	return out
}

// probeVerdict prints the sweep's probe block and judges -require-probes:
// exitFail, with a line naming them, when a required probe went unhit.
// It writes the sweep's typed result (sweepResult) for a parent.
func (sp *sweepSpec) probeVerdict(stdout io.Writer) int {
	t := tallyProbes(sp.jobs)
	t.print(stdout)
	unhit := t.unhitRequired(sp.o.requireProbes)
	code := exitOK
	if len(unhit) > 0 {
		fmt.Fprintf(stdout, "FAIL probes: required, never hit in %d runs: %s\n", t.runs, strings.Join(unhit, ", "))
		code = exitFail
	}
	sp.unhit = unhit
	return code
}

// sweepResult is a sweep's typed result, written for a parent that runs
// the sweep as its child (proc.WriteResult; nothing is printed): the
// mutant catalog's probes suite reads it. Its fields spell
// mutants.Summary's.
type sweepResult struct {
	Summary    string   `json:"summary"`
	Exit       int      `json:"exit"`
	Command    string   `json:"command"`
	Seed       string   `json:"seed"` // the -seeds range
	Runs       int      `json:"runs"`
	Violations []string `json:"violations"`
	Evidence   []string `json:"evidence,omitempty"`
	// UnhitProbes are the -require-probes probes no run hit.
	UnhitProbes []string `json:"unhit_probes,omitempty"`
}

func (sp *sweepSpec) writeResult(code int) {
	r := sweepResult{Summary: classOf(code), Exit: code, Command: "sweep", Seed: sp.seeds, Runs: len(sp.jobs), Violations: []string{}, UnhitProbes: sp.unhit}
	for _, j := range sp.jobs {
		if j.summary == nil {
			continue
		}
		for _, v := range j.summary.Violations {
			if !slices.Contains(r.Violations, v) {
				r.Violations = append(r.Violations, v)
			}
		}
		for _, e := range j.summary.Evidence {
			if len(r.Evidence) < 10 && !slices.Contains(r.Evidence, e) {
				r.Evidence = append(r.Evidence, e)
			}
		}
	}
	if len(sp.unhit) > 0 {
		r.Evidence = append(r.Evidence, "probes never hit: "+strings.Join(sp.unhit, ", "))
	}
	if err := proc.WriteResult(r); err != nil {
		fmt.Fprintf(os.Stderr, "relaysim sweep: result file: %v\n", err)
	}
}

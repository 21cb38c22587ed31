package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// shrinkFlags are shrink's own flags, beside the run flags.
type shrinkFlags struct {
	property     string
	budget       time.Duration
	maxRuns      int
	out          string
	equiv        bool
	keepSchedule bool
	verbose      bool
	isolate      bool
}

// cmdShrink reduces a failing seed to a small run that fails on the same
// property (sim.Shrink): it prints the sizes before and after, the time it
// took, the shrunk actions and faults, and the shrunk run's failure
// banner. -o writes the shrunk run as a story. Exit 1 when the shrunk run
// violates the property (the usual outcome), 0 when the seed passes
// (nothing to shrink), 3 when the run cannot finish.
func cmdShrink(args []string, stdout, stderr io.Writer) int {
	f := newRunFlags("shrink", stdout)
	var sf shrinkFlags
	f.fs.StringVar(&sf.property, "property", "", "the property the shrunk run must still violate (default: the run's first violation's)")
	f.fs.DurationVar(&sf.budget, "budget", 5*time.Minute, "stop shrinking after this much wall time (0: no bound); the result so far is printed")
	f.fs.IntVar(&sf.maxRuns, "max-runs", 0, "stop shrinking after this many candidate runs (0: no bound; unlike -budget, the same on every machine)")
	f.fs.StringVar(&sf.out, "o", "", "write the shrunk run as a story (docs/stories.md) to this file; relaysim replay -story FILE plays it")
	f.fs.BoolVar(&sf.equiv, "equiv", false, "shrink the seed's calm variant while its mode-equivalence check fails on the property (the modes disagree, or a mode's calm run violates it)")
	f.fs.BoolVar(&sf.keepSchedule, "keep-schedule", false, "keep the seed's schedule (skip trying the first-pick schedule)")
	f.fs.BoolVar(&sf.verbose, "v", false, "print every stage and every candidate, kept or refused (and why), on stderr, one line each")
	f.fs.BoolVar(&sf.isolate, "isolate", false, "run every candidate in a child process of this binary (default: only for a run that leaves goroutines behind, which ends the process running it: -property no-goroutine-leaks, or no -property and the seed's run leaks)")
	if err := f.parse(args); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "shrink", err)
	}
	for _, name := range []string{"history", "cpuprofile", "memprofile"} {
		if set(f.fs, name) {
			return usageError(stderr, "shrink", fmt.Errorf("-%s is a flag of run, not of shrink", name))
		}
	}
	if f.cfg.Scheduler == "exhaustive" {
		return usageError(stderr, "shrink", fmt.Errorf("-scheduler exhaustive explores many schedules; shrink shrinks one run (random, pct or first)"))
	}
	if sf.isolate && sf.equiv {
		return usageError(stderr, "shrink", fmt.Errorf("-isolate runs one mode's run per child; not with -equiv"))
	}
	if err := checkOutputs(append(f.outputs(), output{flag: "o", path: sf.out})...); err != nil {
		return usageError(stderr, "shrink", err)
	}
	prog := newShrinkProgress(stderr, sf.verbose)
	opt := sim.ShrinkOptions{Property: sf.property, Equiv: sf.equiv, MaxRuns: sf.maxRuns, Budget: sf.budget,
		KeepSchedule: sf.keepSchedule, Progress: prog.update}
	iso, err := shrinkIsolation(f, sf)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim shrink: %v\n", err)
		return exitHarness
	}
	if iso != nil {
		defer iso.close()
		opt.Runner = iso.run
		if sf.verbose {
			fmt.Fprintf(stderr, "shrink: every run in a child process (-isolate)\n")
		}
	} else {
		again := "shrink again with -isolate"
		if sf.equiv {
			again = "shrink the calm run of the mode that leaks alone instead (-mode M -calm -isolate; -isolate does not take -equiv)"
		}
		f.cfg.OnLeftovers = func(*sim.Result) {
			fmt.Fprintf(stderr, "relaysim shrink: a run left goroutines behind after teardown (%s), which ends this process: %s\n", model.PropGoroutineLeak, again)
			coverExit(exitHarness)
		}
	}
	res, err := sim.Shrink(f.cfg, opt)
	prog.finish()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim shrink: seed %s mode %s: %v\n", f.cfg.Seed, f.cfg.Mode, err)
		if errors.Is(err, sim.ErrNoFailure) {
			return exitOK
		}
		return exitHarness
	}
	replay := shrinkCommand(f)
	story := sf.out
	if iso != nil && story == "" {
		// The banner comes from the story's replay in a child: keep the
		// story, so that the replay line it prints works.
		tmp, err := os.CreateTemp("", "relaysim-shrunk-*.txt")
		if err != nil {
			fmt.Fprintf(stderr, "relaysim shrink: %v\n", err)
			return exitHarness
		}
		story = tmp.Name()
		_ = tmp.Close()
	}
	if story != "" {
		if err := writeStory(story, res, replay); err != nil {
			fmt.Fprintf(stderr, "relaysim shrink: -o: %v\n", err)
			return exitHarness
		}
		replay = fmt.Sprintf("%s relaysim replay -story %s", goRun(), story)
	}
	printShrink(stdout, res, story)
	if iso != nil {
		return replayIsolated(iso, story, f.trace, f.timeline, stdout, stderr)
	}
	if f.trace != "" {
		if err := os.WriteFile(f.trace, []byte(res.Final.Trace.Text()), 0o644); err != nil {
			fmt.Fprintf(stderr, "relaysim shrink: write trace: %v\n", err)
		}
	}
	if f.timeline != "" {
		if err := writeTimeline(f.timeline, "relaysim shrink", replay, res.Final); err != nil {
			fmt.Fprintf(stderr, "relaysim shrink: write timeline: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "timeline:    %s (open it in a browser)\n", f.timeline)
		}
	}
	if sf.equiv {
		fmt.Fprintf(stdout, "mode equivalence FAILED for seed %s (calm variant, shrunk)\nviolated: %s\n", f.cfg.Seed, res.Violation)
		for _, r := range res.Modes {
			fmt.Fprintf(stdout, "%-7s trace-hash %s\n", r.Config.Mode, r.TraceHash)
		}
		fmt.Fprintf(stdout, "replay:  %s\n", replay)
		var hashes []string
		for _, r := range res.Modes {
			hashes = append(hashes, r.TraceHash)
		}
		writeSummary(stdout, runSummary{Summary: classViolation, Exit: exitFail, Command: "shrink", Seed: f.cfg.Seed.String(), Mode: "all",
			Violations: []string{res.Property}, TraceHash: strings.Join(hashes, " "), Replay: replay,
			Evidence: violatedLines(nil, []model.Violation{res.Violation})})
		fmt.Fprintf(stdout, "equiv-hashes: %s\n", strings.Join(hashes, " "))
		return exitFail
	}
	fmt.Fprint(stdout, Banner(res.Final, replay, ""))
	code := exitCode(res.Final)
	printSummary(stdout, "shrink", res.Final, code, replay)
	fmt.Fprintf(stdout, "trace-hash: %s\n", res.Final.TraceHash)
	return code
}

// shrinkIsolation is the isolator when the shrink's runs go to child
// processes (-isolate; by default when the property is
// no-goroutine-leaks, or when no property is given and the seed's run,
// played once in a child, leaks), else nil.
func shrinkIsolation(f *runFlags, sf shrinkFlags) (*isolator, error) {
	isolate := sf.isolate
	auto := !set(f.fs, "isolate") && !sf.equiv
	if auto && sf.property == model.PropGoroutineLeak {
		isolate = true
	}
	if !isolate && !auto {
		return nil, nil
	}
	iso, err := newIsolator()
	if err != nil {
		return nil, err
	}
	if !isolate && sf.property == "" {
		cfg := f.cfg
		cfg.KeepTrace = false
		r, _ := iso.run(cfg)
		isolate = slices.ContainsFunc(r.Violations, func(v model.Violation) bool { return v.Property == model.PropGoroutineLeak })
	}
	if !isolate {
		iso.close()
		return nil, nil
	}
	return iso, nil
}

// printShrink prints what the shrink did and the run it left.
func printShrink(w io.Writer, res *sim.ShrinkResult, story string) {
	c := res.Config
	fmt.Fprintf(w, "relaysim shrink seed=%s mode=%s property=%s\n", c.Seed, c.Mode, res.Property)
	fmt.Fprintf(w, "before:      %s\n", res.Before)
	fmt.Fprintf(w, "after:       %s\n", res.After)
	spent := ""
	if res.OutOfBudget {
		spent = " (stopped by the budget: it may shrink further)"
	}
	fmt.Fprintf(w, "took:        %s, %d candidate runs%s\n", res.Elapsed.Round(time.Millisecond), res.Runs, spent)
	fmt.Fprintf(w, "shrunk run:  nodes=%d channels=%d scheduler=%s duration=%s drain=%s mix: %s\n", c.Nodes, c.ChannelsPerPeer, c.Scheduler, c.Duration, c.Drain, mixOf(c))
	const most = 40
	for i, a := range c.Actions {
		if i == most {
			fmt.Fprintf(w, "  ... and %d more actions\n", len(c.Actions)-most)
			break
		}
		fmt.Fprintf(w, "  action %8s  %s\n", a.At, a)
	}
	for i, fl := range c.Faults {
		if i == most {
			fmt.Fprintf(w, "  ... and %d more faults\n", len(c.Faults)-most)
			break
		}
		fmt.Fprintf(w, "  fault  %8s  %s\n", fl.At, fl)
	}
	if story != "" {
		fmt.Fprintf(w, "story:       %s\n", story)
	}
}

func mixOf(c sim.Config) string {
	if c.Mix == nil {
		return "drawn"
	}
	m := *c.Mix
	var parts []string
	for _, r := range []struct {
		name string
		p    float64
	}{{"drop-req", m.DropRequest}, {"drop-resp", m.DropResponse}, {"dup", m.Duplicate}, {"delay", m.Delay}, {"redis-err", m.RedisError}, {"recv-break", m.RecvBreak}} {
		if r.p > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.3f", r.name, r.p))
		}
	}
	if len(parts) == 0 {
		return "no per-op faults"
	}
	return strings.Join(parts, " ")
}

// shrinkCommand is the command that shrinks this seed again.
func shrinkCommand(f *runFlags) string {
	return shrinkOf(replayCommand(f))
}

// writeStory writes the shrunk run as a story (formatStory) to path.
func writeStory(path string, res *sim.ShrinkResult, command string) error {
	c := res.Config
	comment := fmt.Sprintf("Shrunk by: %s\nIt violates %s (%s -> %s).\n%s", command, res.Property, res.Before, res.After, res.Violation)
	format := formatStory
	if res.Modes != nil {
		// The calm run that violates the property itself, if one does:
		// a story of that mode alone. Else the modes only disagree: the
		// two-mode form, whose equiv runs every mode's calm run and
		// compares them.
		c = res.Modes[0].Config
		found := false
		for _, r := range res.Modes {
			if slices.ContainsFunc(r.Violations, func(v model.Violation) bool { return v.Property == res.Property }) {
				c, found = r.Config, true
				break
			}
		}
		if !found {
			comment += "\nA mode-equivalence failure: each mode's calm run holds on its own, but the modes disagree on what users received; equiv runs the story in every mode and compares them (as relaysim equiv does)."
			format = formatEquivStory
		}
		c.KeepTrace = false
	}
	text, err := format(c, comment)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// shrinkProgress is the shrink's progress line on a terminal (nothing
// elsewhere), or with -v a line per stage and kept candidate.
type shrinkProgress struct {
	w       io.Writer
	tty     bool
	verbose bool
	shown   bool
}

func newShrinkProgress(w io.Writer, verbose bool) *shrinkProgress {
	return &shrinkProgress{w: w, tty: stderrIsTerminal(w) && !verbose, verbose: verbose}
}

func (p *shrinkProgress) update(s sim.ShrinkProgress) {
	line := fmt.Sprintf("shrink: %s: actions=%d faults=%d nodes=%d users=%d, %d runs, %s",
		s.Stage, s.Size.Actions, s.Size.Faults, s.Size.Nodes, s.Size.Users, s.Runs, s.Elapsed.Round(time.Second))
	switch {
	case p.verbose && s.Tried != "":
		fmt.Fprintf(p.w, "shrink: %s: candidate %d refused: %s\n", s.Stage, s.Runs, s.Tried)
	case s.Tried != "":
	case p.verbose:
		fmt.Fprintln(p.w, line)
	case p.tty:
		p.shown = true
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	}
}

func (p *shrinkProgress) finish() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
}

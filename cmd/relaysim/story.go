package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/sim"
)

// storyArg reports whether a replay's arguments name a story (-story).
func storyArg(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		a = strings.TrimPrefix(a, "-")
		if a == "-story" || a == "story" || strings.HasPrefix(a, "story=") || strings.HasPrefix(a, "-story=") {
			return true
		}
	}
	return false
}

// cmdReplayStory plays one story (scenarios.FormatStory's format: a
// pinned run with its actions, faults and mix as data): exit 0 when its
// check finds every property holding, 1 with the failure banner when it
// finds a violation, 2 on a story it cannot read (one line, naming the
// file's line), 3 when the run could not finish.
func cmdReplayStory(args []string, stdout, stderr io.Writer) int {
	const name = "replay"
	fs := newFlagSet("replay-story")
	path := fs.String("story", "", "the story file to play (scenarios/testdata/shrunk/*.txt, relaysim shrink -o)")
	trace := fs.String("trace", "", "write the whole trace to this file")
	fs.String("mutant", "", mutantFlagUsage) // taken out before parsing: main.go, mutant.go
	timeline := fs.String("timeline", "", "write the run as a self-contained HTML timeline to this file")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		if strings.HasPrefix(err.Error(), "no flag") {
			err = fmt.Errorf("%w: a story carries its own seed, mode and knobs (replay -story FILE takes only -trace, -timeline and -mutant)", err)
		}
		return usageError(stderr, name, err)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *path == "" {
		return usageError(stderr, name, fmt.Errorf("-story needs a file"))
	}
	if err := checkOutputs(output{flag: "trace", path: *trace}, output{flag: "timeline", path: *timeline}); err != nil {
		return usageError(stderr, name, err)
	}
	text, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: %v\n", name, err)
		return exitUsage
	}
	st, err := scenarios.ReadStory(*path, string(text))
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: %v\n", name, err)
		return exitUsage
	}
	cfg := st.Config
	cfg.KeepTrace = *trace != "" || *timeline != ""
	replay := fmt.Sprintf("%s relaysim replay -story %s", goRun(), *path)
	if st.Equiv {
		return replayEquivStory(cfg, *path, replay, *trace, *timeline, stdout, stderr)
	}
	report := func(res *sim.Result, rerun bool) int {
		if *trace != "" && res.Trace != nil {
			if err := os.WriteFile(*trace, []byte(res.Trace.Text()), 0o644); err != nil {
				fmt.Fprintf(stderr, "relaysim: write trace: %v\n", err)
			}
		}
		wroteTimeline := false
		if *timeline != "" && res.History != nil {
			if err := writeTimeline(*timeline, "relaysim replay -story "+*path, replay, res); err != nil {
				fmt.Fprintf(stderr, "relaysim: write timeline: %v\n", err)
			} else {
				wroteTimeline = true
			}
		}
		fmt.Fprintf(stdout, "story:       %s (%d actions, %d faults)\n", *path, len(res.Actions), len(res.Faults))
		summary(stdout, res)
		if res.Failed() {
			shown := res
			if rerun {
				shown = sim.WholeTrace(nil, res)
			}
			fmt.Fprint(stdout, Banner(shown, replay, ""))
		}
		if wroteTimeline {
			fmt.Fprintf(stdout, "timeline:    %s (open it in a browser)\n", *timeline)
		}
		code := exitCode(res)
		printSummary(stdout, name, res, code, replay)
		fmt.Fprintf(stdout, "trace-hash: %s\n", res.TraceHash)
		return code
	}
	cfg.OnLeftovers = func(res *sim.Result) { coverExit(report(res, false)) }
	return report(sim.Run(nil, cfg), true)
}

// replayEquivStory plays a two-mode story (one that ends with equiv): the
// story's run in every mode, each judged on its own, and what every user
// received compared across them, printed as relaysim equiv prints a seed's
// check (its summary line has mode "all" and the last line is
// "equiv-hashes: ..."). -trace and -timeline write a file per mode, the
// mode's name before the extension.
func replayEquivStory(cfg sim.Config, path, replay, trace, timeline string, stdout, stderr io.Writer) int {
	runs, vs := sim.Equivalence(nil, cfg)
	fmt.Fprintf(stdout, "story:       %s (%d actions, %d faults; equiv: every mode)\n", path, len(cfg.Actions), len(cfg.Faults))
	code := exitOK
	if len(vs) > 0 {
		code = exitFail
	}
	var hashes, errs []string
	var all []model.Violation
	for _, r := range runs {
		mode := string(r.Config.Mode)
		if trace != "" && r.Trace != nil {
			if err := os.WriteFile(perMode(trace, mode), []byte(r.Trace.Text()), 0o644); err != nil {
				fmt.Fprintf(stderr, "relaysim: write trace: %v\n", err)
			}
		}
		if timeline != "" && r.History != nil {
			if err := writeTimeline(perMode(timeline, mode), "relaysim replay -story "+path+" ("+mode+")", replay, r); err != nil {
				fmt.Fprintf(stderr, "relaysim: write timeline: %v\n", err)
			} else {
				fmt.Fprintf(stdout, "timeline:    %s (open it in a browser)\n", perMode(timeline, mode))
			}
		}
		summary(stdout, r)
		if r.Failed() {
			fmt.Fprint(stdout, Banner(sim.WholeTrace(nil, r), replay, ""))
		}
		code = worse(code, exitCode(r))
		all = append(all, r.Violations...)
		if e := runError(r); e != "" {
			errs = append(errs, mode+": "+e)
		}
		hashes = append(hashes, r.TraceHash)
	}
	if len(vs) > 0 {
		fmt.Fprintf(stdout, "mode equivalence FAILED for story %s: %s\n", path, model.Summarize(vs))
		for i, v := range vs {
			if i == 10 {
				fmt.Fprintf(stdout, "... and %d more\n", len(vs)-10)
				break
			}
			fmt.Fprintf(stdout, "violated: %s\n", v)
		}
		fmt.Fprintf(stdout, "replay:  %s\n", replay)
	}
	s := runSummary{Summary: classOf(code), Exit: code, Command: "replay", Seed: cfg.Seed.String(), Mode: "all",
		Violations: propertiesOf(append(all, vs...)), Error: strings.Join(errs, "; "), TraceHash: strings.Join(hashes, " ")}
	if code != exitOK {
		s.Replay = replay
		s.Evidence = violatedLines(evidenceOf(nil, runs...), vs[:min(10, len(vs))])
	}
	writeSummary(stdout, s)
	fmt.Fprintf(stdout, "equiv-hashes: %s\n", strings.Join(hashes, " "))
	return code
}

// perMode is path with the mode's name before its extension
// (trace.txt -> trace.bulk.txt).
func perMode(path, mode string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + mode + ext
}

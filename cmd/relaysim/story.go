package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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
	timeline := fs.String("timeline", "", "write the run as a self-contained HTML timeline to this file")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		if strings.HasPrefix(err.Error(), "no flag") {
			err = fmt.Errorf("%w: a story carries its own seed, mode and knobs (replay -story FILE takes only -trace and -timeline)", err)
		}
		return usageError(stderr, name, err)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *path == "" {
		return usageError(stderr, name, fmt.Errorf("-story needs a file"))
	}
	text, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: %v\n", name, err)
		return exitUsage
	}
	cfg, err := scenarios.ParseStory(*path, string(text))
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: %v\n", name, err)
		return exitUsage
	}
	cfg.KeepTrace = *trace != "" || *timeline != ""
	replay := fmt.Sprintf("%s ./cmd/relaysim replay -story %s", goRun(), *path)
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
	cfg.OnLeftovers = func(res *sim.Result) { os.Exit(report(res, false)) }
	return report(sim.Run(nil, cfg), true)
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// cmdEquiv is mode equivalence for one seed: the seed's calm variant runs in
// every relay mode, each run is judged on its own, and every user's
// delivered messages per room must be the same in all of them. A difference
// prints both runs' replay commands. The last line is
// "equiv-hashes: <single> <bulk>".
func cmdEquiv(args []string, stdout, stderr io.Writer) int {
	f := newRunFlags("equiv", stderr)
	f.fs.Lookup("mode").Usage = "ignored: equiv runs every mode"
	if err := f.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "relaysim equiv: %v\n", err)
		fmt.Fprintln(stderr, "usage: relaysim equiv -seed 0x2a [run flags]")
		return exitUsage
	}
	runs, vs := sim.Equivalence(nil, f.cfg)
	failed := len(vs) > 0
	var hashes, replays []string
	for _, r := range runs {
		summary(stdout, r)
		if r.Failed() {
			failed = true
			fmt.Fprint(stdout, Banner(r, replayCalm(f, r)))
		}
		hashes = append(hashes, r.TraceHash)
		replays = append(replays, replayCalm(f, r))
	}
	if len(vs) > 0 {
		fmt.Fprintf(stdout, "mode equivalence FAILED for seed %s (calm variant): %s\n", f.cfg.Seed, model.Summarize(vs))
		for i, v := range vs {
			if i == 10 {
				fmt.Fprintf(stdout, "... and %d more\n", len(vs)-10)
				break
			}
			fmt.Fprintf(stdout, "violated: %s\n", v)
		}
		for _, r := range replays {
			fmt.Fprintf(stdout, "replay:  %s\n", r)
		}
	}
	fmt.Fprintf(stdout, "equiv-hashes: %s\n", strings.Join(hashes, " "))
	if failed {
		return exitFail
	}
	return exitOK
}

// replayCalm replays one mode's calm run.
func replayCalm(f *runFlags, r *sim.Result) string {
	cmd := strings.Replace(replayCommand(f), "-mode "+string(f.cfg.Mode), "-mode "+string(r.Config.Mode), 1)
	if !strings.Contains(cmd, " -calm") {
		cmd = strings.Replace(cmd, " -trace ", " -calm -trace ", 1)
	}
	return cmd
}

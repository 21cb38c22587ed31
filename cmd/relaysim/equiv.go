package main

import (
	"errors"
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
	f := newRunFlags("equiv", stdout)
	f.fs.Lookup("mode").Usage = "ignored: equiv runs every mode"
	if err := f.parse(args); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "equiv", err)
	}
	runs, vs := sim.Equivalence(nil, f.cfg)
	code := exitOK
	if len(vs) > 0 {
		code = exitFail
	}
	var hashes, replays, errs []string
	var all []model.Violation
	for _, r := range runs {
		summary(stdout, r)
		if r.Failed() {
			fmt.Fprint(stdout, Banner(r, replayCalm(f, r), shrinkOf(replayCalm(f, r))))
		}
		code = worse(code, exitCode(r))
		all = append(all, r.Violations...)
		if e := runError(r); e != "" {
			errs = append(errs, string(r.Config.Mode)+": "+e)
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
		fmt.Fprintf(stdout, "shrink:  %s\n", shrinkOf(equivCommand(f)))
	}
	s := runSummary{Summary: classOf(code), Exit: code, Command: "equiv", Seed: f.cfg.Seed.String(), Mode: "all",
		Violations: propertiesOf(append(all, vs...)), Error: strings.Join(errs, "; "), TraceHash: strings.Join(hashes, " ")}
	if code != exitOK {
		s.Replay = equivCommand(f)
		s.Evidence = violatedLines(evidenceOf(nil, runs...), vs[:min(10, len(vs))])
	}
	s.Probes = sumProbes(runs...)
	writeSummary(stdout, s)
	fmt.Fprintf(stdout, "equiv-hashes: %s\n", strings.Join(hashes, " "))
	return code
}

// worse is the exit code of two verdicts together: a violation outranks a
// harness error, which outranks a pass.
func worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case exitOK:
			return 0
		case exitFail:
			return 2
		}
		return 1
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// equivCommand runs the whole equivalence check again.
func equivCommand(f *runFlags) string {
	cmd := strings.Replace(replayCommand(f), " replay ", " equiv ", 1)
	cmd = strings.Replace(cmd, " -mode "+string(f.cfg.Mode), "", 1)
	return strings.TrimSuffix(cmd, " -trace trace.txt")
}

// replayCalm replays one mode's calm run.
func replayCalm(f *runFlags, r *sim.Result) string {
	cmd := strings.Replace(replayCommand(f), "-mode "+string(f.cfg.Mode), "-mode "+string(r.Config.Mode), 1)
	if !strings.Contains(cmd, " -calm") {
		cmd = strings.Replace(cmd, " -trace ", " -calm -trace ", 1)
	}
	return cmd
}

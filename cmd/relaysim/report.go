package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/relaysim/relaysim/experiments"
)

// cmdReport runs the seeds' experiments on the calibrated cost model and
// prints their tables (Markdown, or JSON rows), optionally with charts.
func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report")
	asJSON := fs.Bool("json", false, "print JSON rows instead of Markdown tables")
	plot := fs.String("plot", "", "write PNG and SVG charts to this directory")
	o := experiments.Full()
	fs.DurationVar(&o.Load, "load", o.Load, "load per condition, virtual (the seed: 120s)")
	fs.DurationVar(&o.Drain, "drain", o.Drain, "drain after the load, virtual (the seed: 60s)")
	messages := fs.Int("messages", 20, "messages per Scenario 1/2 run")
	what := ""
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		what, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "report", err)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "report", fmt.Errorf("unexpected argument %q: want relaysim report axis-a|axis-b|scenario1|scenario2|all [flags]", fs.Arg(0)))
	}
	if what == "" {
		return usageError(stderr, "report", errors.New("name the experiment: axis-a, axis-b, scenario1, scenario2 or all (all runs every one at full length: about 18 minutes on 2 cores)"))
	}
	if err := checkOutputs(output{flag: "plot", path: *plot, dir: true}); err != nil {
		return usageError(stderr, "report", err)
	}
	// On a terminal every step is said; elsewhere (a CI log) the step in
	// progress every heartbeatEvery, so a long report is never silent.
	var st status
	st.set("starting " + what)
	if isTerminal(os.Stderr) {
		start := time.Now()
		o.Progress = func(msg string) { fmt.Fprintf(stderr, "[%5.0fs] %s\n", time.Since(start).Seconds(), msg) }
	} else {
		o.Progress = st.set
		defer startHeartbeat(stderr, heartbeatEvery, "report", &st)()
	}
	rep, err := experiments.Run(o, what, *messages, experiments.Scenario2Users)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim report: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		if err := rep.JSONRows(stdout); err != nil {
			fmt.Fprintf(stderr, "relaysim report: %v\n", err)
			return exitFail
		}
	} else {
		rep.Markdown(stdout)
	}
	if *plot != "" {
		files, err := experiments.Plot(rep, *plot)
		if err != nil {
			fmt.Fprintf(stderr, "relaysim report: charts: %v\n", err)
			return exitFail
		}
		for _, f := range files {
			fmt.Fprintf(stderr, "wrote %s\n", f)
		}
	}
	return exitOK
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/realcluster"
)

// cmdCheck judges a saved history offline: a real run's (relaysim real)
// or a simulated run's (relaysim run -history FILE).
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check")
	path := fs.String("history", "", "the history file (JSON lines) to judge")
	usage := func(err error) int {
		fmt.Fprintf(stderr, "relaysim check: %v\n", err)
		fmt.Fprintln(stderr, "usage: relaysim check -history FILE")
		return exitUsage
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "check", err)
	}
	switch {
	case fs.NArg() > 0:
		return usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *path == "":
		return usage(errors.New("-history FILE is required"))
	}
	f, err := os.Open(*path)
	if err != nil {
		return usage(err)
	}
	defer f.Close()
	h, meta, err := realcluster.ReadHistory(f)
	if err != nil {
		return usage(fmt.Errorf("%s: %w", *path, err))
	}
	vs := realcluster.CheckHistory(h)
	from := "a simulated run"
	if meta != nil {
		from = fmt.Sprintf("%s seed=%s mode=%s", meta.Runner, meta.Seed, meta.Mode)
	}
	live, fromLog := model.DeliveryCounts(h)
	fmt.Fprintf(stdout, "relaysim check %s (%s)\n", *path, from)
	fmt.Fprintf(stdout, "history:     %d events, %d deliveries (%d live, %d from the log), %d faults, %d rooms\n",
		len(h.Events), live+fromLog, live, fromLog, len(h.Faults), len(h.Final.Logs))
	fmt.Fprintf(stdout, "judged:      %v\n", realcluster.JudgedProperties())
	realcluster.WriteViolations(stdout, vs)
	fmt.Fprintf(stdout, "check: %d events, %d deliveries, violations: %d\n", len(h.Events), live+fromLog, len(vs))
	if len(vs) > 0 {
		return exitFail
	}
	return exitOK
}

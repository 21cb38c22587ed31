package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/relaysim/relaysim/mutants"
)

// cmdMutants runs the bug catalog (mutants/catalog) against the suite: each
// mutant is built with -overlay and must be caught by the property it
// names. The last line is "mutants: <n> caught: <k>"; exit 1 when any
// mutant was not caught.
func cmdMutants(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("mutants")
	only := fs.String("only", "", "run only these mutants (comma-separated names)")
	budget := fs.Duration("budget", 3*time.Minute, "per mutant: how long the suite may look for the bug")
	list := fs.Bool("list", false, "list the catalog and exit")
	jobs := fs.Int("j", 1, "mutants run in parallel (seconds to catch grow with it)")
	rotate := fs.String("rotate", "", "run only part i of n of the selection (i/n), for CI")
	overlay := fs.Bool("overlay", false, "write the selected mutants' overlays and print one tab-separated line per mutant (name, overlay path, property, suite, modes, extra flags); run nothing")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "mutants", err)
	}
	all, err := mutants.Catalog()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim mutants: %v\n", err)
		return exitFail
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	ms, err := mutants.Select(all, names, *rotate)
	if err == nil && (fs.NArg() > 0 || *jobs < 1 || *budget <= 0) {
		err = fmt.Errorf("usage: relaysim mutants [-only NAME,...] [-budget D] [-j N] [-rotate i/n] [-list]")
	}
	if err != nil {
		fmt.Fprintf(stderr, "relaysim mutants: %v\n", err)
		return exitUsage
	}
	if *list {
		listMutants(stdout, ms)
		return exitOK
	}
	if *overlay {
		return writeOverlays(ms, stdout, stderr)
	}
	return runMutants(ms, *budget, *jobs, stdout, stderr)
}

func runMutants(ms []*mutants.Mutant, budget time.Duration, jobs int, stdout, stderr io.Writer) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim mutants: %v\n", err)
		return exitFail
	}
	o := mutants.Options{Root: root, Budget: budget, Progress: stderr, Heartbeat: heartbeatEvery}
	rs := mutants.Run(context.Background(), o, ms, jobs)
	if mutants.Report(stdout, rs) < len(rs) {
		return exitFail
	}
	return exitOK
}

// writeOverlays applies each mutant (mutants.Apply) and prints its
// overlay, for `go build -overlay` by hand (make shrink-table).
func writeOverlays(ms []*mutants.Mutant, stdout, stderr io.Writer) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim mutants: %v\n", err)
		return exitFail
	}
	for _, m := range ms {
		o, err := mutants.Apply(root, m)
		if err != nil {
			fmt.Fprintf(stderr, "relaysim mutants: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, o, m.Property, m.Suite, strings.Join(m.RunModes(), ","), strings.Join(m.Args, " "))
	}
	return exitOK
}

func listMutants(w io.Writer, ms []*mutants.Mutant) {
	for _, m := range ms {
		fmt.Fprintf(w, "%-40s %-22s %-8s %s\n", m.Name, m.Property, m.Suite, m.Story)
		if m.Note != "" { // why this property catches it
			fmt.Fprintf(w, "%-40s %-22s %-8s why %s: %s\n", "", "", "", m.Property, m.Note)
		}
	}
}

// moduleRoot is the directory of the main module's go.mod: mutants are
// applied to, and built from, the source tree.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run it inside the relaysim module (go env GOMOD: %q, %v)", gomod, err)
	}
	return filepath.Dir(gomod), nil
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/relaysim/relaysim/mutants"
)

// mutantCommands are the commands that take -mutant NAME: the command runs
// on the runner built with that catalog mutant applied, as the catalog
// builds it. (real takes its own -mutant: it mutates relayd, not itself.)
var mutantCommands = []string{"run", "replay", "equiv", "sweep", "guide", "shrink", "explore"}

// mutantFlagUsage is -mutant's line in each command's -h.
const mutantFlagUsage = "run this command on the runner built with this catalog mutant applied (relaysim mutants -list names them): writes its overlay, builds the runner with it and runs this command there"

// splitMutant takes -mutant NAME (or -mutant=NAME, --mutant ...) out of a
// command's arguments. ok is false when there is none; a -mutant with no
// name is an error.
func splitMutant(args []string) (name string, rest []string, ok bool, err error) {
	name, rest, ok, err = splitFlag(args, "mutant")
	if ok && name == "" {
		return "", nil, false, errors.New("-mutant needs a mutant's name (relaysim mutants -list names them)")
	}
	return name, rest, ok, err
}

// splitFlag takes the flag -name VALUE (or -name=VALUE, --name ...) out of
// a command's arguments, before they are parsed. ok is false when there
// is none; a -name with no value after it is an error.
func splitFlag(args []string, name string) (value string, rest []string, ok bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		flag, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || flag != name {
			continue
		}
		rest = slices.Concat(args[:i:i], args[i+1:])
		if !hasValue {
			if i+1 >= len(args) {
				return "", nil, false, errors.New("flag needs an argument: -" + name)
			}
			value = args[i+1]
			rest = slices.Concat(args[:i:i], args[i+2:])
		}
		return value, rest, true, nil
	}
	return "", args, false, nil
}

// helpAsked reports whether args ask for a command's usage (-h, -help).
func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// runMutant runs `relaysim cmd rest...` on the runner built with the named
// catalog mutant: it writes the mutant's overlay (mutants.Apply, the same
// files the catalog writes), builds the runner with it beside the overlay
// and runs it, passing its standard streams and its exit code through (a
// build that fails is a harness error, exit 3, not a violation). The mutant
// build sets RELAYSIM_OVERLAY itself, so the replay lines it prints name
// the overlay.
func runMutant(cmd, name string, rest []string, stdout, stderr io.Writer) int {
	m, err := findMutant(name)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: %v\n", cmd, err)
		return exitUsage
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -mutant builds the runner from the source tree: %v\n", cmd, err)
		return exitHarness
	}
	overlay, err := mutants.Apply(root, m)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -mutant %s: %v\n", cmd, name, err)
		return exitHarness
	}
	bin := filepath.Join(filepath.Dir(overlay), "relaysim")
	build := []string{"build", "-overlay=" + overlay}
	dir, _, cover, _ := splitFlag(rest, "cover")
	if cover && dir != "" {
		// -cover runs there: the mutant's runner is built with coverage.
		bin += "-cover"
		build = append(build, coverBuildArgs...)
		if err := checkOutputs(output{flag: "cover", path: dir, dir: true}); err != nil {
			return usageError(stderr, cmd, err)
		}
		done, err := coverScratch(dir)
		if err != nil {
			fmt.Fprintf(stderr, "relaysim %s: -cover: %v\n", cmd, err)
			return exitHarness
		}
		defer done()
	}
	fmt.Fprintf(stderr, "relaysim: building the runner with mutant %s (%s): go %s\n", name, m.File, strings.Join(build, " "))
	b := exec.Command("go", append(build, "-o", bin, "./cmd/relaysim")...)
	b.Dir = root
	if out, err := b.CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -mutant %s does not build: %v\n%s", cmd, name, err, out)
		return exitHarness
	}
	c := exec.Command(bin, append([]string{cmd}, rest...)...)
	c.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, mutants.OverlayEnv+"=") })
	return execPassing(c, stdout, stderr, cmd+": -mutant "+name)
}

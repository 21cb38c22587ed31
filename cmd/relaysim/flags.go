package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"time"
)

// newFlagSet is a command's flag set: errors come back to the command,
// which prints one line for them (parseFlags), never the flag package's
// whole usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs. -h prints the command's full usage (to
// stdout, exit 0: errHelp); any other error is returned as one line that
// names the flag, the value and what the flag wants.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(fs, stdout)
		return errHelp
	}
	if err != nil {
		return flagError(fs, err)
	}
	return nil
}

// errHelp is the -h a command answered by printing its usage.
var errHelp = flag.ErrHelp

// synopses are the commands' command lines, for -h.
var synopses = map[string]string{
	"run":          "run -seed 0x2a -mode single|bulk|stream [flags]",
	"replay":       "replay -seed 0x2a -mode single|bulk|stream [flags]   (the same as run; replay -story FILE plays a story)",
	"replay-story": "replay -story FILE [-trace FILE] [-timeline FILE]   (plays a story: docs/stories.md)",
	"equiv":        "equiv -seed 0x2a [run flags]",
	"sweep":        "sweep -seeds 1-200 -mode single|bulk|stream|both|all [-j N] [-shard i/n | -shards N] [-junit FILE] [run flags]",
	"guide":        "guide -corpus DIR [-runs 100] [-seed 1] [-mode single|bulk|stream|both|all] [-j N]   (docs/guided.md)",
	"report":       "report axis-a|axis-b|scenario1|scenario2|all [-json] [-plot DIR] [-load 120s -drain 60s]",
	"mutants":      "mutants [-only NAME,...] [-budget D] [-j N] [-rotate i/n] [-list]",
	"real":         "real -seed 0x2a -duration 60s [-nodes 3 -nemesis all|none|KIND,... -mutant NAME -out DIR]",
	"check":        "check -history FILE",
	"explore":      "explore -scenario FILE | -story NAME [-mode single|bulk|stream|all] [-bound N|none] [-crashes N -reboots N -drops N -loses N -errors N -delays N -breaks N -partitions N -client-drops N -client-loses N -client-dups N -timers N] [-reduce=false] [-schedule FILE] [-timeline FILE] [-j N | -shard i/n] [-junit FILE]",
	"junit-merge":  "junit-merge -o all.xml|- junit-1.xml junit-2.xml ... (or 'junit-*.xml')",
	"cover":        "cover [-require-cover P] [-require-probes LIST] DIR   (merges the coverage data that commands given -cover DIR wrote there: docs/coverage.md)",
}

// printUsage writes the command's synopsis and every flag with its
// default.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	syn, ok := synopses[fs.Name()]
	if !ok {
		syn = fs.Name() + " [flags]"
	}
	fmt.Fprintf(w, "usage: relaysim %s\n\nflags:\n", syn)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// usageError prints a bad command line as one line, with where the flags
// are listed, and returns exitUsage.
func usageError(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "relaysim %s: %v (relaysim %s -h lists the flags)\n", name, err, name)
	return exitUsage
}

// The flag package's error messages (go/src/flag/flag.go), to be said
// again in one line with what the flag wants.
var (
	badValueRe = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): `)
	undefRe    = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
	noArgRe    = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
)

// flagError rewrites one of the flag package's errors: "-duration 5: want
// a duration such as 5s or 1m30s", "no flag -colour", "-seed needs a
// value".
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := badValueRe.FindStringSubmatch(msg); m != nil {
		w := want(fs.Lookup(m[2]))
		if w == "" {
			w = "another value"
		}
		return fmt.Errorf("-%s %q: want %s", m[2], m[1], w)
	}
	if m := undefRe.FindStringSubmatch(msg); m != nil {
		if near := nearest(fs, m[1]); near != "" {
			return fmt.Errorf("no flag -%s (did you mean -%s?)", m[1], near)
		}
		return fmt.Errorf("no flag -%s", m[1])
	}
	if m := noArgRe.FindStringSubmatch(msg); m != nil {
		if w := want(fs.Lookup(m[1])); w != "" {
			return fmt.Errorf("-%s needs a value: %s", m[1], w)
		}
		return fmt.Errorf("-%s needs a value", m[1])
	}
	return err
}

// want says what a flag's value must look like, from its type; "" for a
// string, which takes anything.
func want(fl *flag.Flag) string {
	if fl == nil {
		return ""
	}
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 5s, 250ms or 1m30s"
	case bool:
		return "true or false (-" + fl.Name + "=false)"
	case int, int64:
		return "a whole number such as 3"
	case uint, uint64:
		return "a whole number >= 0"
	case float64:
		return "a number such as 0.5"
	}
	return ""
}

// nearest is the defined flag closest to a mistyped name: one edit away
// (two for names longer than four letters), "" when none is or the name is
// too short to guess from.
func nearest(fs *flag.FlagSet, name string) string {
	if len(name) < 3 {
		return ""
	}
	limit := 1
	if len(name) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	var names []string
	fs.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	slices.Sort(names)
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and
// swaps of neighbours that turn a into b (optimal string alignment).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

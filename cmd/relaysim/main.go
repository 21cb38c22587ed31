// Command relaysim runs relaysim simulations: one seed (run, replay), many
// seeds (sweep).
//
//	relaysim run -seed 0x2a -mode bulk [-scheduler random|pct|exhaustive] [-trace FILE] [-nodes N -users U -rooms R -duration D ...]
//	relaysim replay -seed 0x2a -mode bulk     (same as run; prints the same trace hash)
//	relaysim replay -story FILE               (plays a story: a pinned run with its actions and faults as data)
//	relaysim equiv -seed 0x2a                 (mode equivalence: the calm variant in every mode)
//	relaysim sweep -seeds 1-200 -mode single|bulk|both [-j N] [-shard i/n | -shards N] [-junit FILE]
//	relaysim guide -corpus DIR -runs N [-seed S] [-mode M] [-j N]   (a sweep steered by code probes)
//	relaysim junit-merge -o all.xml junit-*.xml   (gathers a sharded sweep's JUnit files)
//	relaysim report axis-a|axis-b|scenario1|scenario2|all [-json] [-plot DIR] [-load 120s -drain 60s]
//	relaysim mutants [-only NAME,...] [-budget D] [-j N] [-rotate i/n] [-list]
//	relaysim explore -scenario FILE | -story NAME [-mode M] [-bound N] [-crashes N -reboots N -drops N ...]
//	relaysim run|replay|sweep|explore ... -cover DIR   (coverage of system/; relaysim cover DIR merges)
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// Exit codes (exitHarness, and what each means for a run: summary.go).
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	defer coverFlush() // -cover: this process' counters (cover.go)
	if slices.Contains(mutantCommands, args[0]) {
		name, rest, ok, err := splitMutant(args[1:])
		if err != nil {
			return usageError(stderr, args[0], err)
		}
		switch {
		case ok && helpAsked(rest):
			// -h lists the flags; the mutant is only named, not built.
			if _, err := findMutant(name); err != nil {
				return usageError(stderr, args[0], err)
			}
			args = append(args[:1:1], rest...)
		case ok:
			return runMutant(args[0], name, rest, stdout, stderr)
		}
	}
	if code, ok := coverCommand(args, stdout, stderr); ok {
		return code
	}
	switch args[0] {
	case "run", "replay":
		if args[0] == "replay" && storyArg(args[1:]) {
			return cmdReplayStory(args[1:], stdout, stderr)
		}
		return cmdRun(args[0], args[1:], stdout, stderr)
	case "equiv":
		return cmdEquiv(args[1:], stdout, stderr)
	case "sweep":
		return cmdSweep(args[1:], stdout, stderr)
	case "guide":
		return cmdGuide(args[1:], stdout, stderr)
	case "sweep-worker": // started by sweep (worker.go); not for people
		proto := os.Stdout
		os.Stdout = os.Stderr
		return cmdSweepWorker(os.Stdin, proto)
	case "junit-merge":
		return cmdJUnitMerge(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "mutants":
		return cmdMutants(args[1:], stdout, stderr)
	case "real":
		return cmdReal(args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "explore":
		return cmdExplore(args[1:], stdout, stderr)
	case "shrink":
		return cmdShrink(args[1:], stdout, stderr)
	case "shrink-run": // started by shrink -isolate (isolate.go); not for people
		return cmdShrinkRun(args[1:], stdout, stderr)
	case "cover":
		return cmdCover(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "relaysim: unknown command %q (relaysim help lists the commands)\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: relaysim <command> [flags]

commands:
  run     run one seed on the embedded default cluster (in-process, no servers)
  replay  run one seed again (same flags as run; prints the same trace hash),
          or play a story: replay -story FILE (docs/stories.md)
  equiv   run one seed's calm variant in every relay mode and compare deliveries
  sweep   run many seeds and list the failing ones
  guide   a sweep steered toward the probes plain sweeps never reach: a corpus of runs, mutated (docs/guided.md)
  junit-merge  gather the JUnit files of a sharded sweep: junit-merge -o all.xml junit-*.xml
  report  the seeds' experiments on the calibrated cost model: axis-a|axis-b|scenario1|scenario2|all [-json] [-plot DIR]
  mutants run the bug catalog: each mutant must be caught by its property
  real    run relayd processes and redis-server for real under a nemesis and judge the history (docs/real-cluster.md)
  check   judge a saved history offline: check -history FILE
  explore model-check a small story: every schedule of its explore block, faults as choices
  shrink  shrink a failing seed (flags of run) to a small run failing on the same property
  cover   merge the coverage data that commands given -cover DIR wrote there: cover DIR

Run 'relaysim <command> -h' for the flags of a command.
Exit codes: 0 every property held, 1 a property was violated, 2 bad usage,
3 a harness error (the run could not finish: it judged nothing).
`)
}

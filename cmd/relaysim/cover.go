package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/coverage"
	"slices"
	"strings"
	"sync"
	"time"
)

// -cover DIR (issue 29): Go coverage of system/, the relay, from the
// command line. The bubble runner drives testing.MainStart (sim/dst), so
// a binary built with -cover does not get the testing runner's coverage
// handling; instead every process of a command writes its counters itself
// (runtime/coverage), at the end of each run: the command's own process,
// each sweep worker after each job, each one-shot child (sweep -isolate,
// explore -j, shrink -isolate) when it ends.
//
// Layout: each command given -cover DIR writes its counters into a
// directory of its own, DIR/data/<command>-<time>-<pid>, and then its
// report from those counters only: DIR/cover.out (the textfmt profile,
// system/ less the generated system/relaypb), DIR/uncovered.txt (the
// blocks never run, by function) and DIR/cover.html (go tool cover
// -html), and the line "cover: system P% of statements" just before its
// last line. `relaysim cover DIR` merges every command's counters in DIR
// (a sharded sweep's shards, say) and writes the report again.
//
// A process writes one counter file, replaced at each write (written
// aside and renamed): counters are cumulative within a process, so its
// last file holds all it ran, and a worker killed under a job keeps what
// it ran before.

const (
	// envCoverData names the directory this process' counters go to; a
	// command given -cover sets it, and its children inherit it.
	envCoverData = "RELAYSIM_COVER_DATA"
	// envCoverReexec marks the instrumented runner this process built
	// and started (coverReexec): it must not build again.
	envCoverReexec = "RELAYSIM_COVER_REEXEC"
	// systemPkg is the package whose coverage the report counts;
	// generatedPkg, under it, is left out.
	systemPkg    = "github.com/relaysim/relaysim/system"
	generatedPkg = systemPkg + "/relaypb"
)

// coverFlagUsage is -cover's line in each command's -h.
const coverFlagUsage = "write Go coverage data of system/ into this directory, with cover.out, uncovered.txt and cover.html, and print a cover: line (docs/coverage.md); builds a runner with coverage when this one has none"

// coverCommands are the commands that take -cover DIR.
var coverCommands = []string{"run", "replay", "equiv", "sweep", "guide", "explore", "shrink"}

// coverBuildArgs are the go build flags of a runner with coverage of
// system/ (not its generated code). The runner's own package is
// instrumented too: without it the binary has no coverage meta-data to
// write. Atomic counters: runtime/coverage writes no others.
var coverBuildArgs = []string{"-cover", "-covermode=atomic", "-coverpkg=" + systemPkg + "," + cmdPkg}

// cmdPkg is this package, the runner.
const cmdPkg = "github.com/relaysim/relaysim/cmd/relaysim"

// coverBuildCommand is the one command that builds a runner with coverage.
func coverBuildCommand(out string) string {
	return "go build " + strings.Join(coverBuildArgs, " ") + " -o " + out + " ./cmd/relaysim"
}

// coverCommand runs a command given -cover DIR; ok is false when args
// have no -cover (or ask for -h: the flag is then only listed).
func coverCommand(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if !slices.Contains(coverCommands, args[0]) {
		return 0, false
	}
	dir, rest, ok, err := splitFlag(args[1:], "cover")
	switch {
	case err != nil:
		return usageError(stderr, args[0], err), true
	case !ok:
		return 0, false
	case helpAsked(rest):
		return run(append([]string{args[0]}, rest...), stdout, stderr), true
	case dir == "":
		return usageError(stderr, args[0], errors.New("-cover needs a directory")), true
	}
	if err := checkOutputs(output{flag: "cover", path: dir, dir: true}); err != nil {
		return usageError(stderr, args[0], err), true
	}
	if !coverInstrumented() {
		if os.Getenv(envCoverReexec) != "" {
			fmt.Fprintf(stderr, "relaysim %s: -cover: the runner built with coverage has none\n", args[0])
			return exitHarness, true
		}
		return coverReexec(args, dir, stdout, stderr), true
	}
	return withCover(args[0], dir, rest, stdout, stderr), true
}

// coverInstrumented reports whether this binary was built with -cover.
func coverInstrumented() bool { return coverage.WriteMeta(io.Discard) == nil }

// coverBinary is where the runner with coverage is built, beside the
// catalog's mutant builds.
func coverBinary() string { return filepath.Join(os.TempDir(), "relaysim-cover", "relaysim") }

// coverReexec builds the runner with coverage (from the source tree, as
// -mutant does) and runs the same command line there, passing its
// standard streams and its exit code through. A build that fails is a
// harness error (exit 3).
func coverReexec(args []string, dir string, stdout, stderr io.Writer) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -cover builds a runner with coverage from the source tree: %v\n", args[0], err)
		return exitHarness
	}
	bin := coverBinary()
	fmt.Fprintf(stderr, "relaysim: -cover: this runner has no coverage counters; building one and running there: %s\n", coverBuildCommand(bin))
	b := exec.Command("go", slices.Concat([]string{"build"}, coverBuildArgs, []string{"-o", bin, "./cmd/relaysim"})...)
	b.Dir = root
	if out, err := b.CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -cover: the runner with coverage does not build: %v\n%s", args[0], err, out)
		return exitHarness
	}
	done, err := coverScratch(dir)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -cover: %v\n", args[0], err)
		return exitHarness
	}
	defer done()
	c := exec.Command(bin, args...)
	c.Env = append(os.Environ(), envCoverReexec+"=1")
	return execPassing(c, stdout, stderr, args[0])
}

// coverScratch points GOCOVERDIR, unless it is set, at a scratch
// directory in dir for the files the runtime of a binary built with -cover
// writes by itself when it exits (it warns when GOCOVERDIR is unset):
// this process' children write there, and done removes it.
func coverScratch(dir string) (done func(), err error) {
	if os.Getenv("GOCOVERDIR") != "" {
		return func() {}, nil
	}
	scratch, err := os.MkdirTemp(dir, ".gocoverdir-*")
	if err != nil {
		return nil, err
	}
	os.Setenv("GOCOVERDIR", scratch)
	return func() {
		os.Unsetenv("GOCOVERDIR")
		_ = os.RemoveAll(scratch)
	}, nil
}

// coverSession is the command this process runs with -cover.
type coverSession struct {
	dir, data string
	out       *heldLine
	reported  bool
	line      string
	err       error
}

// activeCover is this process' -cover command (nil: none).
var activeCover *coverSession

// withCover runs the command with its counters going to a data
// directory of its own under dir, then writes the report.
func withCover(cmd, dir string, rest []string, stdout, stderr io.Writer) int {
	data := filepath.Join(dir, "data", fmt.Sprintf("%s-%s-%d", cmd, time.Now().Format("20060102-150405"), os.Getpid()))
	if err := os.MkdirAll(data, 0o755); err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -cover: %v\n", cmd, err)
		return exitHarness
	}
	done, err := coverScratch(dir)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: -cover: %v\n", cmd, err)
		return exitHarness
	}
	defer done()
	os.Setenv(envCoverData, data)
	defer os.Unsetenv(envCoverData)
	// Every run under -cover has one P (unless the caller set
	// GOMAXPROCS): the blocks a run reaches outside its scheduled
	// operations (at teardown, which of two ready cases a session's pump
	// takes) depend on how many Ps run it, and a sweep's workers get
	// more at -j 1 than at -j 2 (jobEnv). With one P each, the cover:
	// line of a sweep does not depend on -j or on sharding.
	if os.Getenv("GOMAXPROCS") == "" {
		os.Setenv("GOMAXPROCS", "1")
		defer os.Unsetenv("GOMAXPROCS")
		if cmd != "sweep" && cmd != "guide" { // a sweep's -j defaults to this process' Ps
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		}
	}
	s := &coverSession{dir: dir, data: data, out: &heldLine{w: stdout}}
	activeCover = s
	defer func() { activeCover = nil }()
	code := run(append([]string{cmd}, rest...), s.out, stderr)
	return s.finish(code, stderr)
}

// finish ends a -cover command: its counters written, the report (unless
// the sweep printed it already: sweepCoverLine) printed before the last
// line. A report that cannot be made is a harness error, unless the
// command found a violation (its evidence stands).
func (s *coverSession) finish(code int, stderr io.Writer) int {
	coverFlush()
	if code == exitUsage {
		s.out.flush()
		_ = os.RemoveAll(s.data) // nothing ran
		return code
	}
	line, err := s.report()
	if err == nil && line != "" {
		fmt.Fprintln(s.out.w, line)
		s.line = "" // printed
	}
	s.out.flush()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim: -cover: %v\n", err)
		return worse(code, exitHarness)
	}
	fmt.Fprintf(stderr, "relaysim: -cover: %s, %s and %s written\n",
		filepath.Join(s.dir, coverOut), filepath.Join(s.dir, uncoveredTxt), filepath.Join(s.dir, coverHTML))
	return code
}

// report writes the session's report, once, and returns its cover: line
// ("" once printed).
func (s *coverSession) report() (string, error) {
	if !s.reported {
		s.reported = true
		coverFlush()
		var st coverStats
		st, s.err = writeCoverReport(s.dir, []string{s.data})
		if s.err == nil {
			s.line = st.line("")
		}
	}
	return s.line, s.err
}

// sweepCoverLine is a sweep's cover: line when it runs with -cover ("" when
// not, or when the report failed: the sweep then ends a harness error),
// with more (the probes hit) after the statements.
func sweepCoverLine(more string) string {
	if activeCover == nil {
		return ""
	}
	line, err := activeCover.report()
	if err != nil || line == "" {
		return ""
	}
	activeCover.line = ""
	if more != "" {
		line += ", " + more
	}
	return line
}

// coverLine is the cover: line: the share of system/'s statements run,
// generated code excluded, then what more (probes) is given.
func coverLine(pct float64, more string) string {
	line := fmt.Sprintf("cover: system %.1f%% of statements", pct)
	if more != "" {
		line += ", " + more
	}
	return line
}

// coverExit writes this process' counters and, for a -cover command,
// its report, before an os.Exit from inside a run (a run that left
// goroutines behind): the last line stays last.
func coverExit(code int) {
	if s := activeCover; s != nil {
		code = s.finish(code, os.Stderr)
	} else {
		coverFlush()
	}
	os.Exit(code)
}

// The counter file of this process: its name is fixed for the process
// (covdata's pattern: covcounters.<meta hash>.<pid>.<time>, the time
// this process started), its contents replaced at each write.
var (
	coverStart = time.Now().UnixNano()
	coverMu    sync.Mutex
	coverMeta  = map[string]string{} // data directory -> meta hash written there
)

// coverFlush writes this process' counters into $RELAYSIM_COVER_DATA,
// when set: a failure is said on stderr, never fatal to the run.
func coverFlush() {
	data := os.Getenv(envCoverData)
	if data == "" || !coverInstrumented() {
		return
	}
	if err := writeCounters(data); err != nil {
		fmt.Fprintf(os.Stderr, "relaysim: -cover: write counters: %v\n", err)
	}
}

func writeCounters(data string) error {
	coverMu.Lock()
	defer coverMu.Unlock()
	hash, ok := coverMeta[data]
	if !ok {
		var err error
		if hash, err = writeMeta(data); err != nil {
			return err
		}
		coverMeta[data] = hash
	}
	var buf bytes.Buffer
	if err := coverage.WriteCounters(&buf); err != nil {
		return err
	}
	name := filepath.Join(data, fmt.Sprintf("covcounters.%s.%d.%d", hash, os.Getpid(), coverStart))
	tmp := filepath.Join(data, fmt.Sprintf(".tmp-%d", os.Getpid()))
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// writeMeta writes this binary's meta-data file into data (once per
// binary: its name is its hash) and returns its hash.
func writeMeta(data string) (string, error) {
	tmp, err := os.MkdirTemp(data, ".meta-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := coverage.WriteMetaDir(tmp); err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(tmp, "covmeta.*"))
	if err != nil || len(files) != 1 {
		return "", fmt.Errorf("meta-data: want one covmeta file, got %d (%v)", len(files), err)
	}
	base := filepath.Base(files[0])
	if _, err := os.Stat(filepath.Join(data, base)); err != nil {
		if err := os.Rename(files[0], filepath.Join(data, base)); err != nil {
			return "", err
		}
	}
	return strings.TrimPrefix(base, "covmeta."), nil
}

// heldLine passes everything written to w but its last whole line, held
// until flush: a -cover command's cover: line goes before the last line
// (trace-hash:, runs:, explore:), which tooling reads.
type heldLine struct {
	w    io.Writer
	held []byte
}

func (h *heldLine) Write(p []byte) (int, error) {
	h.held = append(h.held, p...)
	// Hold from the start of the last whole line (and the part of a line
	// after it); pass on what comes before.
	if e := bytes.LastIndexByte(h.held, '\n'); e > 0 {
		if s := bytes.LastIndexByte(h.held[:e], '\n'); s >= 0 {
			if _, err := h.w.Write(h.held[:s+1]); err != nil {
				return 0, err
			}
			h.held = append(h.held[:0], h.held[s+1:]...)
		}
	}
	return len(p), nil
}

func (h *heldLine) flush() {
	if len(h.held) > 0 {
		_, _ = h.w.Write(h.held)
		h.held = h.held[:0]
	}
}

// cmdCover is `relaysim cover DIR`: the report of every command's
// counters in DIR together (a sharded sweep's shards merged).
func cmdCover(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cover")
	require := fs.Float64("require-cover", 0, "fail (exit 1) when less than this share (percent) of system/'s statements not set aside (docs/cover-aside.txt) ran")
	requireProbes := fs.String("require-probes", "", "fail (exit 1) when one of these code probes (all, or a comma-separated list; docs/probes.md) is hit by no run of the merged sweeps")
	if helpAsked(args) { // after DIR too, as the docs' commands are checked
		args = []string{"-h"}
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "cover", err)
	}
	if fs.NArg() != 1 {
		return usageError(stderr, "cover", errors.New("want one directory, the -cover DIR of the commands to merge"))
	}
	dir := fs.Arg(0)
	required, err := parseRequireProbes(*requireProbes)
	if err != nil {
		return usageError(stderr, "cover", err)
	}
	data, err := coverDataDirs(dir)
	if err != nil {
		return usageError(stderr, "cover", err)
	}
	if err := checkOutputs(output{flag: "cover", path: dir, dir: true}); err != nil {
		return usageError(stderr, "cover", err)
	}
	st, err := writeCoverReport(dir, data)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim cover: %v\n", err)
		return exitHarness
	}
	probes, ok, err := mergeTallies(data)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim cover: %v\n", err)
		return exitHarness
	}
	more := ""
	if ok {
		more = probes.share()
	}
	fmt.Fprintf(stdout, "merged: the counters of %d commands in %s\n", len(data), dir)
	if never := probes.never(); ok && len(never) > 0 {
		fmt.Fprintf(stdout, "probes never hit in %d runs: %s\n", probes.runs, strings.Join(never, ", "))
	}
	code := exitOK
	if *require > 0 && st.rest() < *require {
		fmt.Fprintf(stdout, "FAIL cover: %.1f%% of the statements not set aside ran, below the %.1f%% required (%s lists the blocks never run)\n",
			st.rest(), *require, filepath.Join(dir, uncoveredTxt))
		code = exitFail
	}
	if len(required) > 0 {
		if !ok {
			fmt.Fprintf(stdout, "FAIL probes: -require-probes needs every command in %s to be a sweep (a sweep saves its probe tally)\n", dir)
			code = exitFail
		} else if unhit := probes.unhitRequired(required); len(unhit) > 0 {
			fmt.Fprintf(stdout, "FAIL probes: required, never hit in %d runs: %s\n", probes.runs, strings.Join(unhit, ", "))
			code = exitFail
		}
	}
	fmt.Fprintln(stdout, st.line(more))
	return code
}

// coverDataDirs lists the data directories under dir/data that hold a
// meta-data file.
func coverDataDirs(dir string) ([]string, error) {
	metas, err := filepath.Glob(filepath.Join(dir, "data", "*", "covmeta.*"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range metas {
		if d := filepath.Dir(m); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no coverage data (a command given -cover %s writes it under %s)", dir, dir, filepath.Join(dir, "data"))
	}
	slices.Sort(out)
	return out, nil
}

// execPassing runs c with this process' standard input and the given
// output streams and returns its exit code (a child that could not run
// or was killed is a harness error).
func execPassing(c *exec.Cmd, stdout, stderr io.Writer, cmd string) int {
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "relaysim %s: %v\n", cmd, err)
	return exitHarness
}

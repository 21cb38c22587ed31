package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relaysim/relaysim/sim"
)

// sweepJob is one (seed, mode) run of a sweep.
type sweepJob struct {
	seed sim.Seed
	mode string
	// churn runs the seed's churn-only variant in mode (run -churn-only).
	churn bool
	// wide runs the job with -alphabet=wide: the sweep's draw for the
	// seed (sim.SweepAlphabet) when the sweep was given no -alphabet.
	wide bool
	// worlds are the fault kinds' bounds the sweep drew for the seed
	// (sim.SweepWorlds: -max-stalls=2, say), for each kind whose bound
	// the sweep was not given.
	worlds []string
	hash   string
	ok     bool
	code   int // the run's exit code (exitHarness for a hang or a crash)
	out    string
	// summary is the run's typed result (nil when it has none: a crash,
	// a hang); the sweep reads it, never out, which it keeps for people.
	summary *runSummary
	wall    time.Duration
	// cmd, when set, is the job's whole command line (a guided search's
	// run: guide.go), in place of the one seed, mode and flags make.
	cmd []string
}

// sweepOpts are a sweep's own flags (the rest are run flags, passed on).
type sweepOpts struct {
	jobs    int
	timeout time.Duration
	isolate bool
	junit   string
	shard   shard
	from    string // where the shard came from ("" for the whole range)
	// requireProbes are the code probes some run must hit (probes.go).
	requireProbes []string
}

// sweepSpec is a parsed sweep command line.
type sweepSpec struct {
	o     sweepOpts
	seeds string
	jobs  []*sweepJob
	extra []string // the run flags the user set, passed to every job
	// nseeds seeds of perSeed runs each (modes: their names).
	nseeds, perSeed int
	modes           string
	unhit           []string // required probes no run hit (probeVerdict)
}

// parseSweep reads a sweep's flags, and its shard from getenv when no
// -shard is given (resolveShard).
func parseSweep(args []string, getenv func(string) string, usage io.Writer) (*sweepSpec, error) {
	f := newRunFlags("sweep", usage)
	seeds := f.fs.String("seeds", "1-100", "seed range A-B (inclusive; hex or decimal)")
	var o sweepOpts
	f.fs.IntVar(&o.jobs, "j", runtime.GOMAXPROCS(0), "runs in parallel (worker processes); default the CPUs this process may use (a container's CPU limit included)")
	shardFlag := f.fs.String("shard", "", "run only shard i of n (i/n, 1 <= i <= n), to split a sweep across machines; default $"+envShard+", else $"+envJobIndex+" (0-based) of -shards, else 1/1")
	shards := f.fs.Int("shards", 0, "shard count that goes with $"+envJobIndex+" (a Kubernetes Indexed Job); default $"+envShards)
	f.fs.StringVar(&o.junit, "junit", "", "write a JUnit XML report to this file: one test case per seed and mode, the failure banner as the failure text")
	f.fs.DurationVar(&o.timeout, "job-timeout", 10*time.Minute, "wall time after which a run counts as hung and its process is killed")
	f.fs.BoolVar(&o.isolate, "isolate", false, "run every job in a fresh process of its own (slower; the way sweeps ran before worker processes)")
	equiv := f.fs.Bool("equiv", true, "also run each seed's calm variant in every mode and compare deliveries (mode equivalence)")
	requireProbes := f.fs.String("require-probes", "", "fail (exit 1) when one of these code probes (all, or a comma-separated list; docs/probes.md) is hit by no run of the sweep (of this shard, with -shard)")
	churn := f.fs.Bool("churn-variant", true, "also run each seed's churn-only variant (its own membership and connection churn, no fault; timely delivery judged with no fault excuse) in each swept mode (off by itself under -upgrade or -calm)")
	f.fs.Lookup("mode").Usage = "relay mode: single, bulk, stream, both (single and bulk) or all"
	f.fs.Lookup("seed").Usage = "not a sweep flag: a sweep runs -seeds (-seeds 0x2a runs one seed)"
	if err := parseFlags(f.fs, args, usage); err != nil {
		return nil, err
	}
	if set(f.fs, "seed") {
		// run's flag, defined here only because sweep shares run's flags:
		// ignoring it would sweep the default range instead.
		return nil, fmt.Errorf("-seed is run's flag; a sweep takes -seeds A-B (-seeds %s for that one seed)", f.seed)
	}
	modes := []string{f.mode}
	switch f.mode {
	case "single", "bulk", "stream":
	case "both":
		modes, f.mode = []string{"single", "bulk"}, "bulk"
	case "all":
		modes, f.mode = []string{"single", "bulk", "stream"}, "bulk"
	default:
		return nil, fmt.Errorf("unknown mode %q: want single, bulk, stream, both (single and bulk) or all", f.mode)
	}
	if err := f.parse(nil); err != nil { // validates the rest
		return nil, err
	}
	lo, hi, err := seedRange(*seeds)
	if err != nil {
		return nil, err
	}
	if o.requireProbes, err = parseRequireProbes(*requireProbes); err != nil {
		return nil, err
	}
	if o.shard, o.from, err = resolveShard(*shardFlag, *shards, getenv); err != nil {
		return nil, err
	}
	switch {
	case o.jobs < 1:
		return nil, fmt.Errorf("-j must be at least 1, got %d", o.jobs)
	case o.timeout <= 0:
		return nil, fmt.Errorf("-job-timeout must be positive, got %s", o.timeout)
	}
	// A churn-only run takes no upgrade and is not calm: a sweep of either
	// runs no churn variant unless asked, and refuses when asked.
	if f.cfg.Upgrade != nil || f.cfg.Calm {
		if set(f.fs, "churn-variant") && *churn {
			return nil, fmt.Errorf("-churn-variant and -upgrade or -calm exclude each other (a churn-only run restarts no node, and its membership changes); add -churn-variant=false")
		}
		*churn = false
	}
	sp := &sweepSpec{o: o, seeds: *seeds, extra: passThrough(f.fs), perSeed: len(modes)}
	names := slices.Clone(modes)
	if *equiv {
		sp.perSeed++
		names = append(names, equivMode)
	}
	if *churn {
		sp.perSeed += len(modes)
		for _, m := range modes {
			names = append(names, churnLabel+" "+m)
		}
	}
	sp.modes = strings.Join(names, ", ")
	sp.nseeds = len(shardSeeds(lo, hi, o.shard))
	for _, s := range shardSeeds(lo, hi, o.shard) {
		wide := !set(f.fs, "alphabet") && sim.SweepAlphabet(s) == sim.AlphabetWide
		worlds := sim.SweepWorlds(s, func(flag string) bool { return set(f.fs, flag) })
		for _, m := range modes {
			sp.jobs = append(sp.jobs, &sweepJob{seed: s, mode: m, wide: wide, worlds: worlds})
		}
		// The calm and churn-only variants inject no fault (they ignore
		// fault bounds): their replay lines name no world.
		if *equiv {
			sp.jobs = append(sp.jobs, &sweepJob{seed: s, mode: equivMode, wide: wide})
		}
		if *churn {
			for _, m := range modes {
				sp.jobs = append(sp.jobs, &sweepJob{seed: s, mode: m, churn: true, wide: wide})
			}
		}
	}
	return sp, nil
}

// cmdSweep runs many seeds in worker processes (worker.go) and lists the
// failing ones with their replay commands. The line before the last
// counts seeds and runs apart; the last line is "runs: <runs> failed:
// <failed runs>" (it said "seeds:" for runs until the first-hour issue).
// stdout depends only on the arguments; progress and speed go to
// stderr. Exit 1 when a run violated a property, else 3 when a run hung or
// crashed (summary.go), else 0.
func cmdSweep(args []string, stdout, stderr io.Writer) int {
	sp, err := parseSweep(args, os.Getenv, stdout)
	if err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "sweep", err)
	}
	all, o, extra := sp.jobs, sp.o, sp.extra
	if err := checkOutputs(output{flag: "junit", path: o.junit}); err != nil {
		return usageError(stderr, "sweep", err)
	}
	start := time.Now()
	prog := newProgress(stderr, len(all), o.shard)
	prog.status.set(fmt.Sprintf("0/%d runs", len(all)))
	stop := startHeartbeat(stderr, heartbeatEvery, prog.label, &prog.status)
	cpu := runSweep(all, o, extra, prog)
	prog.finish()
	stop()
	fmt.Fprintln(stderr, speedLine(len(all), time.Since(start), cpu, o))
	if o.junit != "" {
		suite := junitSuiteOf(all, extra, sp.seeds, o)
		if err := writeJUnit(o.junit, junitReport([]junitSuite{suite})); err != nil {
			fmt.Fprintf(stderr, "relaysim sweep: %v\n", err)
			return exitFail
		}
	}
	for _, j := range all {
		if !j.ok {
			fmt.Fprintf(stdout, "FAIL seed=%s mode=%s trace-hash=%s\n  replay: %s\n  shrink: %s\n", j.seed, j.label(), j.hash, j.replay(extra), shrinkOf(j.replay(extra)))
			if line := j.evidence(); line != "" {
				fmt.Fprintf(stdout, "  %s\n", line)
			}
		}
	}
	return sp.verdict(stdout)
}

// verdict prints a finished sweep's counts, seeds and runs apart, then
// the last line, and returns the sweep's exit code.
func (sp *sweepSpec) verdict(stdout io.Writer) int {
	failed, code := 0, exitOK
	badSeeds := map[sim.Seed]bool{}
	for _, j := range sp.jobs {
		if !j.ok {
			failed++
			badSeeds[j.seed] = true
			code = worse(code, j.code)
		}
	}
	if len(sp.jobs) == 0 {
		// Legitimate (an Indexed Job with more shards than seeds), but
		// never silent: a green job that ran nothing looks like coverage.
		fmt.Fprintf(stdout, "sweep: %s\n", sp.emptyNote())
	}
	if line := sweepCoverage(sp.jobs); line != "" {
		fmt.Fprintln(stdout, line)
	}
	code = worse(code, sp.probeVerdict(stdout))
	fmt.Fprintf(stdout, "sweep: %d seeds x %d runs (%s) = %d runs; failed: %d seeds, %d runs\n",
		sp.nseeds, sp.perSeed, sp.modes, len(sp.jobs), len(badSeeds), failed)
	probes := tallyProbes(sp.jobs)
	if activeCover != nil { // -cover DIR: relaysim cover merges the shards' tallies too
		if err := probes.save(activeCover.data); err != nil {
			fmt.Fprintf(os.Stderr, "relaysim sweep: -cover: %v\n", err)
		}
	}
	if line := sweepCoverLine(probes.share()); line != "" { // -cover DIR: cover.go
		fmt.Fprintln(stdout, line)
	}
	last := fmt.Sprintf("runs: %d failed: %d", len(sp.jobs), failed)
	if len(sp.unhit) > 0 {
		last += fmt.Sprintf(" required-probes-unhit: %d", len(sp.unhit))
	}
	fmt.Fprintln(stdout, last)
	if code != exitOK && code != exitFail {
		code = exitHarness // a hung job, or a crash the Go runtime exited 2 for
	}
	sp.writeResult(code)
	return code
}

// emptyNote says why a sweep has nothing to run.
func (sp *sweepSpec) emptyNote() string {
	return fmt.Sprintf("shard %s of -seeds %s holds no seed: nothing ran (shard i/n takes every n-th seed of the range from the i-th)", sp.o.shard, sp.seeds)
}

// coresUsed is how many cores a sweep of -j n can keep busy here.
func coresUsed(n int) int { return max(1, min(n, runtime.NumCPU())) }

// speedLine is the sweep's throughput: jobs per wall second per core used
// (the figure), and jobs per CPU second of the processes that ran
// them, which a machine shared with other work does not skew.
func speedLine(jobs int, wall, cpu time.Duration, o sweepOpts) string {
	how := "worker processes"
	if o.isolate {
		how = "a process per job (-isolate)"
	}
	cores := coresUsed(o.jobs)
	rate := float64(jobs) / max(wall.Seconds(), 1e-9)
	return fmt.Sprintf("sweep: %d seeds in %s on %d cores (-j %d, %s): %.2f seeds/s, %.2f seeds/s/core; %s of CPU, %.2f seeds per CPU-second",
		jobs, wall.Round(10*time.Millisecond), cores, o.jobs, how, rate, rate/float64(cores),
		cpu.Round(10*time.Millisecond), float64(jobs)/max(cpu.Seconds(), 1e-9))
}

// jobGOGC is the garbage collector's GOGC for the processes that run a
// sweep's jobs. A run allocates some 100 MB over a live heap of 15-20 MB, so
// at the default (100) a worker spends about a fifth of its CPU collecting;
// at 300 a sweep takes ~15% less CPU for a heap that may grow to four times
// what is live instead of twice (BENCHMARKS.md, "Sweep throughput"). The
// collector's timing changes no trace: a run's hash does not depend on it.
const jobGOGC = 300

// jobEnv is the environment of a sweep's worker and job processes, jobs of
// them at a time, when this process may use procs CPUs: the sweep's own,
// with GOGC=jobGOGC unless the caller set GOGC, and GOMAXPROCS=procs/jobs
// (at least 1) unless the caller set GOMAXPROCS. A run is sequential by
// design (the scheduler releases one operation at a time and waits for
// quiescence), so a second P per process buys little but idle threads
// spinning and waking each other; with as many workers as CPUs, one P each
// took ~20% less CPU and wall time (BENCHMARKS.md).
func jobEnv(env []string, jobs, procs int) []string {
	var gogc, maxprocs bool
	for _, kv := range env {
		gogc = gogc || strings.HasPrefix(kv, "GOGC=")
		maxprocs = maxprocs || strings.HasPrefix(kv, "GOMAXPROCS=")
	}
	env = slices.Clip(env)
	if !gogc {
		env = append(env, "GOGC="+strconv.Itoa(jobGOGC))
	}
	if !maxprocs {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(max(1, procs/max(1, jobs))))
	}
	return env
}

// runSweep runs the jobs on o.jobs workers, reporting each to prog, and
// returns the CPU time of the processes that ran them.
func runSweep(all []*sweepJob, o sweepOpts, extra []string, prog *progress) time.Duration {
	p := newPool(o, extra)
	p.run(all, prog)
	return p.close()
}

// pool is a sweep's fan-out: o.jobs worker processes (worker.go), kept
// across the batches run on it (a guided search runs one batch after
// another), each job run by the first free worker.
type pool struct {
	l    *launcher
	work chan poolJob
	wg   sync.WaitGroup
}

type poolJob struct {
	j    *sweepJob
	done func()
}

func newPool(o sweepOpts, extra []string) *pool {
	self, err := selfPath()
	if err != nil {
		self = os.Args[0]
	}
	p := &pool{
		l:    &launcher{self: self, extra: extra, timeout: o.timeout, env: jobEnv(os.Environ(), o.jobs, runtime.GOMAXPROCS(0))},
		work: make(chan poolJob),
	}
	for range o.jobs {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w := &worker{launcher: p.l}
			defer w.stop(false)
			for pj := range p.work {
				if o.isolate {
					p.l.runJob(pj.j)
				} else {
					w.do(pj.j)
				}
				pj.done()
			}
		}()
	}
	return p
}

// run runs a batch of jobs and returns when every one has finished.
func (p *pool) run(batch []*sweepJob, prog *progress) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, j := range batch {
		wg.Add(1)
		p.work <- poolJob{j: j, done: func() {
			mu.Lock()
			prog.done(j.ok)
			mu.Unlock()
			wg.Done()
		}}
	}
	wg.Wait()
}

// close stops the workers and returns the CPU time of every process that
// ran a job.
func (p *pool) close() time.Duration {
	close(p.work)
	p.wg.Wait()
	return time.Duration(p.l.cpu.Load())
}

// equivMode names a sweep job that runs the seed's mode-equivalence check.
const equivMode = "equiv"

// churnLabel names a sweep job's churn-only variant (its mode follows).
const churnLabel = "churn-only"

func (j *sweepJob) args() []string {
	if j.cmd != nil {
		return j.cmd
	}
	var args []string
	switch {
	case j.mode == equivMode:
		args = []string{"equiv", "-seed", j.seed.String()}
	case j.churn:
		args = []string{"run", "-seed", j.seed.String(), "-mode", j.mode, "-" + churnLabel}
	default:
		args = []string{"run", "-seed", j.seed.String(), "-mode", j.mode}
	}
	if j.wide {
		args = append(args, "-alphabet=wide")
	}
	return append(args, j.worlds...)
}

// label is the job's mode as reports name it: the mode, "equiv", or
// "<mode> churn-only" for the churn-only variant.
func (j *sweepJob) label() string {
	if j.churn {
		return j.mode + " " + churnLabel
	}
	return j.mode
}

// replay is the command that runs the job again on its own.
func (j *sweepJob) replay(extra []string) string {
	cmd := goRun() + " relaysim " + strings.Join(j.args(), " ") + joinArgs(extra)
	if j.mode == equivMode {
		return cmd
	}
	return strings.Replace(cmd, "relaysim run ", "relaysim replay ", 1) + " -trace trace.txt"
}

// evidence is the first evidence line of a failed job: its summary's
// (runSummary.Evidence), or for a job without one (it crashed) the
// first panic line of what it printed, quoted for the reader: the job is
// a harness error either way.
func (j *sweepJob) evidence() string {
	if j.summary != nil {
		if len(j.summary.Evidence) > 0 {
			return j.summary.Evidence[0]
		}
		return ""
	}
	for _, l := range strings.Split(j.out, "\n") {
		if strings.HasPrefix(l, "panic: ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// passThrough returns the run flags the user set, for the child runs.
func passThrough(fs *flag.FlagSet) []string {
	skip := map[string]bool{"seeds": true, "j": true, "shard": true, "shards": true, "mode": true, "seed": true, "trace": true,
		"equiv": true, "churn-variant": true, "junit": true, "job-timeout": true, "isolate": true, "require-probes": true}
	var out []string
	fs.Visit(func(fl *flag.Flag) {
		if !skip[fl.Name] {
			out = append(out, fmt.Sprintf("-%s=%s", fl.Name, fl.Value))
		}
	})
	return out
}

func joinArgs(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return " " + strings.Join(a, " ")
}

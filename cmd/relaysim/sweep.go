package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/relaysim/relaysim/sim"
)

// sweepJob is one (seed, mode) run of a sweep.
type sweepJob struct {
	seed sim.Seed
	mode string
	hash string
	ok   bool
	out  string
}

// cmdSweep runs many seeds, each in its own process (its own bubble), and
// lists the failing ones with their replay commands. The last line is
// "seeds: <runs> failed: <k>".
func cmdSweep(args []string, stdout, stderr io.Writer) int {
	f := newRunFlags("sweep", stderr)
	seeds := f.fs.String("seeds", "1-100", "seed range A-B (inclusive; hex or decimal)")
	jobs := f.fs.Int("j", runtime.NumCPU(), "runs in parallel (processes)")
	shard := f.fs.String("shard", "1/1", "run only shard i of n (i/n), to split a sweep across machines")
	equiv := f.fs.Bool("equiv", true, "also run each seed's calm variant in every mode and compare deliveries (mode equivalence)")
	f.fs.Lookup("mode").Usage = "relay mode: single, bulk, stream, both (single and bulk) or all"
	var modes []string
	err := func() error {
		if err := f.fs.Parse(args); err != nil {
			return err
		}
		switch f.mode {
		case "both":
			modes, f.mode = []string{"single", "bulk"}, "bulk"
		case "all":
			modes, f.mode = []string{"single", "bulk", "stream"}, "bulk"
		default:
			modes = []string{f.mode}
		}
		return f.parse(nil) // validates the rest
	}()
	list, err2 := sweepSeeds(*seeds, *shard)
	if err == nil {
		err = err2
	}
	if err == nil && *jobs < 1 {
		err = fmt.Errorf("-j must be at least 1, got %d", *jobs)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "relaysim sweep: %v\n", err)
		fmt.Fprintln(stderr, "usage: relaysim sweep -seeds 1-200 -mode single|bulk|stream|both|all [-j N] [-shard i/n] [run flags]")
		return exitUsage
	}
	var all []*sweepJob
	for _, s := range list {
		for _, m := range modes {
			all = append(all, &sweepJob{seed: s, mode: m})
		}
		if *equiv {
			all = append(all, &sweepJob{seed: s, mode: equivMode})
		}
	}
	extra := passThrough(f.fs)
	runSweep(all, *jobs, extra, stderr)
	failed := 0
	for _, j := range all {
		if !j.ok {
			failed++
			fmt.Fprintf(stdout, "FAIL seed=%s mode=%s trace-hash=%s\n  replay: %s\n", j.seed, j.mode, j.hash, j.replay(extra))
			if line := lastViolation(j.out); line != "" {
				fmt.Fprintf(stdout, "  %s\n", line)
			}
		}
	}
	fmt.Fprintf(stdout, "seeds: %d failed: %d\n", len(all), failed)
	if failed > 0 {
		return exitFail
	}
	return exitOK
}

// runSweep runs the jobs on n worker processes, printing progress.
func runSweep(all []*sweepJob, n int, extra []string, stderr io.Writer) {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	work := make(chan *sweepJob)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, failed := 0, 0
	step := max(1, len(all)/20)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				runJob(self, j, extra)
				mu.Lock()
				done++
				if !j.ok {
					failed++
				}
				if done%step == 0 || done == len(all) {
					fmt.Fprintf(stderr, "sweep: %d/%d runs, %d failed\n", done, len(all), failed)
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range all {
		work <- j
	}
	close(work)
	wg.Wait()
}

// equivMode names a sweep job that runs the seed's mode-equivalence check.
const equivMode = "equiv"

func (j *sweepJob) args() []string {
	if j.mode == equivMode {
		return []string{"equiv", "-seed", j.seed.String()}
	}
	return []string{"run", "-seed", j.seed.String(), "-mode", j.mode}
}

// replay is the command that runs the job again on its own.
func (j *sweepJob) replay(extra []string) string {
	cmd := "go run ./cmd/relaysim " + strings.Join(j.args(), " ") + joinArgs(extra)
	if j.mode == equivMode {
		return cmd
	}
	return strings.Replace(cmd, "relaysim run ", "relaysim replay ", 1) + " -trace trace.txt"
}

func runJob(self string, j *sweepJob, extra []string) {
	args := append(j.args(), extra...)
	var out bytes.Buffer
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	j.out = out.String()
	j.ok = err == nil
	sc := bufio.NewScanner(strings.NewReader(j.out))
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "trace-hash: "); ok {
			j.hash = h
		}
		if h, ok := strings.CutPrefix(sc.Text(), "equiv-hashes: "); ok {
			j.hash = h
		}
	}
	if j.hash == "" {
		j.ok = false
		j.hash = "none (the run crashed)"
	}
}

func lastViolation(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "violated: ") || strings.HasPrefix(l, "error:  ") || strings.HasPrefix(l, "panic: ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// sweepSeeds expands "A-B" and keeps the seeds of shard "i/n".
func sweepSeeds(spec, shard string) ([]sim.Seed, error) {
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		b = a
	}
	lo, err := sim.ParseSeed(a)
	if err != nil {
		return nil, fmt.Errorf("-seeds %q: %w", spec, err)
	}
	hi, err := sim.ParseSeed(b)
	if err != nil {
		return nil, fmt.Errorf("-seeds %q: %w", spec, err)
	}
	if hi < lo || hi-lo > 1_000_000 {
		return nil, fmt.Errorf("-seeds %q: want A-B with A <= B and at most a million seeds", spec)
	}
	is, ns, ok := strings.Cut(shard, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("-shard %q: want i/n with 1 <= i <= n", shard)
	}
	var out []sim.Seed
	for s, k := lo, 0; s <= hi; s, k = s+1, k+1 {
		if k%n == i-1 {
			out = append(out, s)
		}
		if s == hi {
			break
		}
	}
	return out, nil
}

// passThrough returns the run flags the user set, for the child runs.
func passThrough(fs *flag.FlagSet) []string {
	skip := map[string]bool{"seeds": true, "j": true, "shard": true, "mode": true, "seed": true, "trace": true, "equiv": true}
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

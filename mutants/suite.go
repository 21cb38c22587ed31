package mutants

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/relaysim/relaysim/internal/proc"
)

// Options configure a catalog run.
type Options struct {
	Root     string        // module root (where go.mod is)
	Budget   time.Duration // per mutant: how long the suite may look for the bug
	Progress io.Writer     // progress lines; nil discards them
	// Heartbeat, when > 0, adds a line to Progress every Heartbeat saying
	// which mutants are in flight (a build or a search can run minutes).
	Heartbeat time.Duration
	// RunTimeout bounds one run of a suite (one seed, one go test): longer
	// is a hang, reported as a crash. Zero means 3 minutes.
	RunTimeout time.Duration
}

// Result is the report of one mutant.
type Result struct {
	Mutant    *Mutant
	Verdict   Verdict
	Seconds   float64 // from the start of the build to the verdict
	Build     float64 // of which building the suite against the mutant
	Runs      int     // seeds (sweep), rapid seeds of 100 checks each, or test runs
	Shrunk    string  // rapid: actions in the shrunk case; "-" otherwise
	Replay    string  // the command that runs the failing case again
	TraceHash string  // sweep: the failing run's trace hash
}

// RunOne applies m, builds the suite against it and runs the suite until
// its first failure or the end of the budget. The budget starts after the
// build, so that a slow compile on a busy machine does not pass for a
// mutant that survived.
func RunOne(ctx context.Context, o Options, m *Mutant) Result {
	start := time.Now()
	res := Result{Mutant: m, Shrunk: "-"}
	overlay, err := Apply(o.Root, m)
	if err != nil {
		res.Verdict = Verdict{Kind: Invalid, Evidence: err.Error()}
		return res
	}
	r := &run{o: o, m: m, overlay: overlay, res: &res}
	// The binary is 40-50 MB and nothing reads it after the verdict (a
	// replay command builds the mutant again from its overlay): a whole
	// catalog's binaries would keep gigabytes of a CI machine's disk.
	defer func() {
		if r.bin != "" {
			os.Remove(r.bin)
		}
	}()
	if r.build(ctx) {
		r.deadline = time.Now().Add(o.Budget)
		res.Build = time.Since(start).Seconds()
		switch m.Suite {
		case SuiteSweep:
			r.sweep(ctx)
		case SuiteRapid:
			r.rapid(ctx)
		case SuiteExplore:
			r.explore(ctx)
		case SuiteProbes:
			r.probes(ctx)
		default:
			r.test(ctx)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

// run is one mutant's search for its first failure.
type run struct {
	o        Options
	m        *Mutant
	overlay  string
	res      *Result
	bin      string // the runner, or the test binary of the suite's package
	pkg      string // test suites: the package, as go test names it
	deadline time.Time
}

// build compiles the runner (sweep) or the suite's test binary against the
// mutant, once; false means it did not compile (the verdict is set).
func (r *run) build(ctx context.Context) bool {
	var args []string
	switch r.m.Suite {
	case SuiteSweep, SuiteExplore, SuiteProbes:
		r.bin = filepath.Join(Dir(r.m.Name), "relaysim")
		args = []string{"build", "-overlay=" + r.overlay, "-o", r.bin, "./cmd/relaysim"}
	default:
		r.pkg = "./scenarios"
		if pkg, _, ok := r.m.TestTarget(); ok {
			r.pkg = pkg
		}
		r.bin = filepath.Join(Dir(r.m.Name), "suite.test")
		args = []string{"test", "-c", "-overlay=" + r.overlay, "-o", r.bin, r.pkg}
	}
	out, err := r.command(ctx, r.o.Root, "go", args...)
	if err != nil {
		r.res.Verdict = Judge(r.m.Property, Outcome{Output: out, Failed: true, BuildError: true})
		return false
	}
	return true
}

// sweep runs seeds 1, 2, 3, ... until a run fails or the budget is spent,
// as `relaysim sweep -mode all` runs them: the runner's default (faulted)
// run in each of the mutant's modes (single, bulk and stream unless it
// names its own), then the seed's calm variant in every mode (`relaysim
// equiv`: mode equivalence, and the fault-free runs where timely delivery
// is judged).
func (r *run) sweep(ctx context.Context) {
	for seed := uint64(1); ; seed++ {
		jobs := [][]string{}
		for _, mode := range r.m.RunModes() {
			jobs = append(jobs, []string{"run", "-seed", fmt.Sprintf("%#x", seed), "-mode", mode})
		}
		jobs = append(jobs, []string{"equiv", "-seed", fmt.Sprintf("%#x", seed)})
		for _, job := range jobs {
			oc, cut := r.attempt(ctx, r.o.Root, r.bin, append(job, r.m.Args...)...)
			if cut || ctx.Err() != nil {
				r.survived()
				return
			}
			r.res.Runs++
			if oc.Failed || oc.TimedOut {
				r.failedRun(oc, job)
				return
			}
		}
		if seed%10 == 0 {
			r.progress("%s: seeds 1-%d pass in %s and the calm variant", r.m.Name, seed, strings.Join(r.m.RunModes(), " and "))
		}
	}
}

// failedRun judges a failed sweep run and keeps its replay command.
func (r *run) failedRun(oc Outcome, job []string) {
	r.res.Verdict = Judge(r.m.Property, oc)
	if oc.Summary != nil {
		r.res.TraceHash = oc.Summary.TraceHash
	}
	if job[0] == "equiv" {
		r.res.Replay = fmt.Sprintf("go tool -overlay=%s relaysim equiv %s%s", r.overlay, strings.Join(job[1:], " "), joinArgs(r.m.Args))
		return
	}
	r.res.Replay = fmt.Sprintf("go tool -overlay=%s relaysim replay %s%s", r.overlay, strings.Join(job[1:], " "), joinArgs(r.m.Args))
}

// explore runs the model checker on the mutant's story (relaysim explore
// with its args, one search per mode it names), each search stopping at
// its first violation: caught when a search exits 1 naming the property
// in its summary line. Runs counts the schedules explored until the first
// violation (first_violation), or all of them; a search that ends
// exhausted with no violation is the mutant's survival.
func (r *run) explore(ctx context.Context) {
	for _, job := range r.m.ExploreJobs(Dir(r.m.Name)) {
		oc, cut := r.attempt(ctx, r.o.Root, r.bin, job...)
		if cut || ctx.Err() != nil {
			r.survived()
			return
		}
		var s Summary
		ok := oc.Summary != nil
		if ok {
			s = *oc.Summary
		}
		switch {
		case ok && s.FirstViolation > 0:
			r.res.Runs += s.FirstViolation // the schedules until caught
		case ok:
			r.res.Runs += s.Schedules
		}
		if oc.Failed || oc.TimedOut {
			r.res.Verdict = Judge(r.m.Property, oc)
			switch {
			case ok && strings.HasPrefix(s.Replay, "go tool -overlay="):
				r.res.Replay = s.Replay // the mutant build names its overlay itself
			case ok && s.Replay != "":
				r.res.Replay = fmt.Sprintf("go tool -overlay=%s relaysim %s", r.overlay, strings.TrimPrefix(s.Replay, "relaysim "))
			}
			return
		}
		r.progress("%s: %s: %d schedules, exhausted=%v, no violation", r.m.Name, strings.Join(job, " "), s.Schedules, s.Exhausted)
	}
	r.res.Verdict = Verdict{Kind: Survived, Evidence: fmt.Sprintf("%d schedules explored, no violation", r.res.Runs)}
}

// probes runs the mutant's one sweep (relaysim sweep -j 1 with its args,
// which name -require-probes) and judges it by its exit code and typed
// result (judgeProbes).
func (r *run) probes(ctx context.Context) {
	job := append([]string{"sweep", "-j", "1"}, r.m.Args...)
	oc, cut := r.attempt(ctx, r.o.Root, r.bin, job...)
	if cut || ctx.Err() != nil {
		r.survived()
		return
	}
	if oc.Summary != nil {
		r.res.Runs = oc.Summary.Runs
	}
	r.res.Verdict = judgeProbes(oc)
	r.res.Replay = fmt.Sprintf("go tool -overlay=%s relaysim %s", r.overlay, strings.Join(job, " "))
}

// rapid runs the rapid state machine with rapid seeds 1, 2, 3, ... (100
// checks each), so that a failure replays from its seed alone.
func (r *run) rapid(ctx context.Context) {
	for seed := 1; ; seed++ {
		for _, mode := range r.m.RunModes() {
			flags := []string{"-run", fmt.Sprintf("TestRelayProperties/%s$", mode), "-rapid.nofailfile", fmt.Sprintf("-rapid.seed=%d", seed)}
			if r.goTest(ctx, append(flags, r.m.Args...)) {
				return
			}
		}
		r.progress("%s: rapid seeds 1-%d pass", r.m.Name, seed)
	}
}

// test runs one go test once; the budget is its time limit.
func (r *run) test(ctx context.Context) {
	_, re, _ := r.m.TestTarget()
	if !r.goTest(ctx, append([]string{"-run", re}, r.m.Args...)) {
		r.survived()
	}
}

func (r *run) survived() {
	r.res.Verdict = Verdict{Kind: Survived, Evidence: fmt.Sprintf("%d runs passed in the %v budget", r.res.Runs, r.o.Budget)}
}

// goTest runs the suite's test binary (in its package directory, as go
// test does) and reports whether it reached a verdict: a failure, or the
// end of the budget. The replay command it records is the go test line
// that builds the same mutant.
func (r *run) goTest(ctx context.Context, flags []string) bool {
	args := append([]string{"-test.count=1", "-test.timeout=0"}, binaryFlags(flags)...)
	oc, cut := r.attempt(ctx, filepath.Join(r.o.Root, r.pkg), r.bin, args...)
	if cut || ctx.Err() != nil {
		r.survived()
		return true
	}
	r.res.Runs++
	if !oc.Failed && !oc.TimedOut {
		return false
	}
	r.res.Verdict = Judge(r.m.Property, oc)
	r.res.Replay = "go test -overlay=" + r.overlay + " -count=1 " + r.pkg + " " + quoteArgs(flags)
	if n := strings.Count(oc.Output, "[rapid] draw action: "); n > 0 {
		r.res.Shrunk = fmt.Sprint(n)
	}
	return true
}

// goTestFlags are go test's flags that a test binary spells -test.NAME.
var goTestFlags = map[string]bool{"run": true, "short": true, "v": true, "count": true, "timeout": true, "failfast": true, "parallel": true, "cpu": true}

// binaryFlags turns go test flags into the test binary's spelling.
func binaryFlags(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		name := strings.TrimLeft(f, "-")
		name, _, _ = strings.Cut(name, "=")
		if strings.HasPrefix(f, "-") && goTestFlags[name] {
			f = "-test." + strings.TrimLeft(f, "-")
		}
		out[i] = f
	}
	return out
}

// attempt runs one command in dir under the run time limit, as a child
// of internal/proc: its output is kept (to quote as evidence), its typed
// result read into the outcome's Summary (a relaysim run's summary, or a
// go test binary's proc.TestResult). cut reports that the
// budget, not the run, set the limit that ended it: the mutant survived
// rather than hung.
func (r *run) attempt(ctx context.Context, dir, name string, args ...string) (oc Outcome, cut bool) {
	limit := r.o.RunTimeout
	if limit == 0 {
		limit = 3 * time.Minute
	}
	left := time.Until(r.deadline)
	if left <= 0 {
		return Outcome{}, true
	}
	budgetBound := left < limit
	rctx, cancel := context.WithTimeout(ctx, min(left, limit))
	defer cancel()
	var out bytes.Buffer
	o := proc.Run(rctx, proc.Spec{Path: name, Args: args, Dir: dir, Env: r.env(), Stdout: &out, Stderr: &out})
	if o.Exit == -1 && !o.TimedOut {
		fmt.Fprintf(&out, "\nrelaysim mutants: %s: %v\n", name, o.Err)
	}
	if o.TimedOut && budgetBound {
		return Outcome{}, true
	}
	oc = Outcome{Output: out.String(), Failed: o.Exit != 0, Exit: o.Exit, TimedOut: o.TimedOut}
	var s Summary
	if o.Decode(&s) == nil {
		oc.Summary = &s
	}
	return oc, false
}

// env is a child's environment: the suite's own banners add the overlay
// to the replay commands they print (scenarios.overlayArg), so that those
// build the mutant too.
func (r *run) env() []string {
	return append(os.Environ(), OverlayEnv+"="+r.overlay)
}

// command runs name with args in dir and returns its combined output.
func (r *run) command(ctx context.Context, dir, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = r.env()
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) && ctx.Err() == nil {
		fmt.Fprintf(&out, "\nrelaysim mutants: %s: %v\n", name, err)
	}
	return out.String(), err
}

func (r *run) progress(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "mutants: "+format+"\n", args...)
	}
}

// lastValue returns what follows prefix on the last line that starts with it.
func lastValue(out, prefix string) string {
	v := ""
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, prefix); ok {
			v = strings.TrimSpace(s)
		}
	}
	return v
}

func joinArgs(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return " " + strings.Join(a, " ")
}

var shellSafe = regexp.MustCompile(`^[-A-Za-z0-9_=./:,]+$`)

// quoteArgs renders flags for pasting into a POSIX shell.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if shellSafe.MatchString(a) {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

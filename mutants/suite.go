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
)

// Options configure a catalog run.
type Options struct {
	Root     string        // module root (where go.mod is)
	Budget   time.Duration // per mutant: how long the suite may look for the bug
	Progress io.Writer     // progress lines; nil discards them
	// RunTimeout bounds one run of a suite (one seed, one go test): longer
	// is a hang, reported as a crash. Zero means 3 minutes.
	RunTimeout time.Duration
}

// Result is the report of one mutant.
type Result struct {
	Mutant    *Mutant
	Verdict   Verdict
	Seconds   float64 // from the start of the build to the verdict
	Runs      int     // seeds (sweep), rapid seeds of 100 checks each, or test runs
	Shrunk    string  // rapid: actions in the shrunk case; "-" otherwise
	Replay    string  // the command that runs the failing case again
	TraceHash string  // sweep: the failing run's trace hash
}

// RunOne applies m and runs its suite until the first failure or the end
// of the budget.
func RunOne(ctx context.Context, o Options, m *Mutant) Result {
	start := time.Now()
	res := Result{Mutant: m, Shrunk: "-"}
	overlay, err := Apply(o.Root, m)
	if err != nil {
		res.Verdict = Verdict{Kind: Invalid, Evidence: err.Error()}
		return res
	}
	r := &run{o: o, m: m, overlay: overlay, res: &res, deadline: start.Add(o.Budget)}
	switch {
	case m.Suite == SuiteSweep:
		r.sweep(ctx)
	case m.Suite == SuiteRapid:
		r.rapid(ctx)
	default:
		r.test(ctx)
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
	deadline time.Time
}

// sweep builds the runner against the mutant once, then runs seeds 1, 2,
// 3, ... in each mode until a run fails or the budget is spent: the
// runner's own default workload, faults and checks, as `relaysim sweep`.
func (r *run) sweep(ctx context.Context) {
	bin := filepath.Join(Dir(r.m.Name), "relaysim")
	if out, err := r.command(ctx, r.o.Root, "go", "build", "-overlay="+r.overlay, "-o", bin, "./cmd/relaysim"); err != nil {
		r.res.Verdict = Judge(r.m.Property, Outcome{Output: out, Failed: true, BuildError: true})
		return
	}
	for seed := uint64(1); ; seed++ {
		for _, mode := range r.m.RunModes() {
			args := append([]string{"run", "-seed", fmt.Sprintf("%#x", seed), "-mode", mode}, r.m.Args...)
			oc, cut := r.attempt(ctx, bin, args...)
			if cut || ctx.Err() != nil {
				r.res.Verdict = Verdict{Kind: Survived}
				return
			}
			r.res.Runs++
			if oc.Failed || oc.TimedOut {
				r.res.Verdict = Judge(r.m.Property, oc)
				r.res.TraceHash = lastValue(oc.Output, "trace-hash: ")
				r.res.Replay = fmt.Sprintf("go run -overlay=%s ./cmd/relaysim replay -seed %#x -mode %s%s", r.overlay, seed, mode, joinArgs(r.m.Args))
				return
			}
		}
		r.progress("%s: seeds 1-%d pass in %s", r.m.Name, seed, strings.Join(r.m.RunModes(), " and "))
	}
}

// rapid runs the rapid state machine with rapid seeds 1, 2, 3, ... (100
// checks each), so that a failure replays from its seed alone.
func (r *run) rapid(ctx context.Context) {
	for seed := 1; ; seed++ {
		for _, mode := range r.m.RunModes() {
			flags := []string{"-run", fmt.Sprintf("TestRelayProperties/%s$", mode), "-rapid.nofailfile", fmt.Sprintf("-rapid.seed=%d", seed)}
			flags = append(flags, r.m.Args...)
			if r.goTest(ctx, "./scenarios", flags) {
				return
			}
		}
		r.progress("%s: rapid seeds 1-%d pass", r.m.Name, seed)
	}
}

// test runs one go test once; the budget is its time limit.
func (r *run) test(ctx context.Context) {
	pkg, re, _ := r.m.TestTarget()
	if !r.goTest(ctx, pkg, append([]string{"-run", re}, r.m.Args...)) {
		r.res.Verdict = Verdict{Kind: Survived}
	}
}

// goTest runs `go test -overlay` on pkg and reports whether it reached a
// verdict (a failure, or the end of the budget).
func (r *run) goTest(ctx context.Context, pkg string, flags []string) bool {
	args := append([]string{"test", "-overlay=" + r.overlay, "-count=1", "-timeout=0", pkg}, flags...)
	oc, cut := r.attempt(ctx, "go", args...)
	if cut || ctx.Err() != nil {
		r.res.Verdict = Verdict{Kind: Survived}
		return true
	}
	r.res.Runs++
	if !oc.Failed && !oc.TimedOut {
		return false
	}
	oc.BuildError = strings.Contains(oc.Output, "[build failed]")
	r.res.Verdict = Judge(r.m.Property, oc)
	r.res.Replay = "go test -overlay=" + r.overlay + " " + pkg + " " + quoteArgs(flags)
	if n := strings.Count(oc.Output, "[rapid] draw action: "); n > 0 {
		r.res.Shrunk = fmt.Sprint(n)
	}
	return true
}

// attempt runs one command in the module root under the run time limit.
// cut reports that the budget, not the run, set the limit that ended it:
// the mutant survived rather than hung.
func (r *run) attempt(ctx context.Context, name string, args ...string) (oc Outcome, cut bool) {
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
	out, err := r.command(rctx, r.o.Root, name, args...)
	timedOut := rctx.Err() != nil
	if timedOut && budgetBound {
		return Outcome{}, true
	}
	return Outcome{Output: out, Failed: err != nil, TimedOut: timedOut}, false
}

// command runs name with args in dir and returns its combined output.
func (r *run) command(ctx context.Context, dir, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// The suite's own banners add the overlay to the replay commands they
	// print (scenarios.overlayArg), so that those build the mutant too.
	cmd.Env = append(os.Environ(), "RELAYSIM_OVERLAY="+r.overlay)
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

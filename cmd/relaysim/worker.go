package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/relaysim/relaysim/internal/proc"
)

// A sweep runs its jobs in worker processes (`relaysim sweep-worker`), each
// running one job after another in-process, through the same entry point
// as `relaysim run` and `relaysim equiv` (run), so a job's output is what
// those commands print. A process per job cost about as much CPU again as
// the run itself (start-up, a heap grown from nothing, page faults);
// BENCHMARKS.md has the figures. One job at a time per process keeps the
// runs apart: a run's goroutine counts and leftover check read the
// process' goroutine profile, and a job that panics, hangs or exits (the
// leftover-goroutine report does) takes only its worker down, never the
// sweep.
//
// Protocol (proc.Worker, proc.Serve): the parent writes one JSON array
// of arguments per line on the worker's stdin; the worker answers one
// JSON workerResult per line on its stdout: the job's exit code, its
// typed summary (the summary line the run wrote, runSummary) and its
// output, kept for people (a failure's banner in JUnit), never read for
// a verdict. Anything else the worker prints goes to its stderr, which
// the parent keeps the tail of for a crash report. A job run in a
// process of its own (-isolate, and after its worker died) hands back
// the same summary through proc.Run's result file.

// selfPath is the binary a fan-out starts as its children: this one (a
// test points it at a fake child).
var selfPath = os.Executable

// workerResult is one finished job, as the worker reports it.
type workerResult struct {
	Code    int           `json:"code"`
	Summary *runSummary   `json:"summary"` // nil: the job wrote none (bad usage)
	Out     string        `json:"out"`
	Wall    time.Duration `json:"wall"`
}

// cmdSweepWorker is the worker side: it serves jobs until stdin closes.
// Call it with the process' real stdout as proto after pointing os.Stdout
// at stderr, so that nothing but results reaches the parent there.
func cmdSweepWorker(in io.Reader, proto io.Writer) int {
	err := proc.Serve(in, proto, func(args []string) any {
		var out bytes.Buffer
		start := time.Now()
		lastSummary.Store(nil)
		code := run(args, &out, &out)
		r := workerResult{Code: code, Out: out.String(), Wall: time.Since(start)}
		if js := lastSummary.Load(); js != nil {
			var s runSummary
			if json.Unmarshal(*js, &s) == nil {
				r.Summary = &s
			}
		}
		return r
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "relaysim sweep-worker: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// launcher starts a sweep's processes: workers, and a process per job
// for -isolate and after a crash. It adds up their CPU time.
type launcher struct {
	self    string
	extra   []string
	timeout time.Duration
	env     []string
	cpu     atomic.Int64 // user + system time of every process ended, ns
}

// ended adds a finished process' CPU time.
func (l *launcher) ended(ps *os.ProcessState) {
	if ps != nil {
		l.cpu.Add(int64(ps.UserTime() + ps.SystemTime()))
	}
}

// worker is the parent's handle on one worker process; it restarts the
// process after a crash, a hang or recycleAfter jobs.
type worker struct {
	*launcher
	w *proc.Worker
}

// recycleAfter bounds the jobs one worker process serves: the heap of a
// long-lived process does not grow with the jobs it ran (BENCHMARKS.md),
// but a fresh process now and then costs little and caps what a leak in
// the relay or a library could pile up.
const recycleAfter = 500

// stop ends the worker process: politely (stdin closed) or killed.
func (w *worker) stop(kill bool) {
	if w.w != nil {
		w.w.Stop(kill)
	}
}

// do runs one job on the worker process, falling back to a process of its
// own for a job whose worker died under it.
func (w *worker) do(j *sweepJob) {
	if w.w == nil {
		w.w = &proc.Worker{Path: w.self, Args: []string{"sweep-worker"}, Env: w.env, Ended: w.ended}
	}
	if w.w.Served() >= recycleAfter {
		w.w.Stop(false)
	}
	var r workerResult
	err := w.w.Do(append(j.args(), w.extra...), &r, w.timeout)
	switch {
	case errors.Is(err, proc.ErrHung):
		j.wall = w.timeout
		j.fail(fmt.Sprintf("hung: no result within %s (-job-timeout); the worker was killed\n%s", w.timeout, w.w.Stderr()),
			fmt.Sprintf("none (timed out after %s)", w.timeout))
	case errors.Is(err, proc.ErrDied):
		w.crashed(j)
	case err != nil:
		j.fail(fmt.Sprintf("%v", err), "none (no worker)")
	default:
		j.wall = r.Wall
		j.record(r.Code, r.Summary, r.Out)
	}
}

// crashed handles a worker that died during j: j runs again in a process of
// its own, the way a sweep ran every job before workers, so that its
// output (a panic, the leftover-goroutine report) is j's alone.
func (w *worker) crashed(j *sweepJob) {
	stderr := w.w.Stderr()
	w.runJob(j)
	if j.ok {
		// The run passes on its own: the worker died of something else.
		j.fail("the job's worker process died, but the job passed when run alone:\n"+stderr+"\n"+j.out, j.hash)
	}
}

// runJob runs j in a process of its own (proc.Run), killed after the
// timeout; its summary comes back in the result file.
func (l *launcher) runJob(j *sweepJob) {
	var out bytes.Buffer
	o := proc.Run(context.Background(), proc.Spec{
		Path: l.self, Args: append(j.args(), l.extra...), Env: l.env,
		Timeout: l.timeout, Stdout: &out, Stderr: &out,
	})
	j.wall = o.Wall
	l.cpu.Add(int64(o.CPU))
	switch {
	case o.TimedOut:
		j.wall = l.timeout
		j.fail(fmt.Sprintf("hung: no result within %s (-job-timeout); killed\n%s", l.timeout, out.String()),
			fmt.Sprintf("none (timed out after %s)", l.timeout))
		return
	case o.Exit == -1:
		j.fail(fmt.Sprintf("start the job's process: %v", o.Err), "none (did not start)")
		return
	}
	var s *runSummary
	if o.Decode(&s) != nil {
		s = nil
	}
	j.record(o.Exit, s, out.String())
}

// record reads a finished job's exit code and typed summary: its trace
// hash (or, for equiv, every mode's), and whether it passed. A job
// without a summary, or whose summary disagrees with its exit code, is a
// run that crashed: a harness error whatever its code. out is kept for
// people only.
func (j *sweepJob) record(code int, s *runSummary, out string) {
	j.out, j.code, j.ok, j.hash, j.summary = out, code, code == exitOK, "", s
	if s == nil || s.Exit != code || s.TraceHash == "" {
		j.ok, j.code, j.summary = false, exitHarness, nil
		j.hash = "none (the run crashed)"
		return
	}
	j.hash = s.TraceHash
}

// fail marks j failed, a harness error (it hung, its process died), with a
// reason in place of output.
func (j *sweepJob) fail(out, hash string) {
	j.ok, j.code, j.out, j.hash, j.summary = false, exitHarness, out, hash, nil
}

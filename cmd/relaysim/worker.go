package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
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
// Protocol: the parent writes one JSON array of arguments per line on the
// worker's stdin; the worker answers one JSON workerResult per line on its
// stdout. Anything else the worker prints goes to its stderr, which the
// parent keeps the tail of for a crash report.

// workerResult is one finished job, as the worker reports it.
type workerResult struct {
	Code int           `json:"code"`
	Out  string        `json:"out"`
	Wall time.Duration `json:"wall"`
}

// cmdSweepWorker is the worker side: it serves jobs until stdin closes.
// Call it with the process' real stdout as proto after pointing os.Stdout
// at stderr, so that nothing but results reaches the parent there.
func cmdSweepWorker(in io.Reader, proto io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(proto)
	for sc.Scan() {
		var args []string
		if err := json.Unmarshal(sc.Bytes(), &args); err != nil {
			fmt.Fprintf(os.Stderr, "relaysim sweep-worker: bad job %q: %v\n", sc.Text(), err)
			return exitUsage
		}
		var out bytes.Buffer
		start := time.Now()
		code := run(args, &out, &out)
		if err := enc.Encode(workerResult{Code: code, Out: out.String(), Wall: time.Since(start)}); err != nil {
			return exitFail // the parent is gone
		}
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
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	results chan workerResult
	stderr  *tailBuffer
	served  int
}

// recycleAfter bounds the jobs one worker process serves: the heap of a
// long-lived process does not grow with the jobs it ran (BENCHMARKS.md),
// but a fresh process now and then costs little and caps what a leak in
// the relay or a library could pile up.
const recycleAfter = 500

func (w *worker) start() error {
	cmd := exec.Command(w.self, "sweep-worker")
	cmd.Env = w.env
	w.stderr = &tailBuffer{max: 64 << 10}
	cmd.Stderr = w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sweep worker: %w", err)
	}
	w.cmd, w.stdin, w.served = cmd, stdin, 0
	w.results = make(chan workerResult)
	go func(results chan<- workerResult) {
		defer close(results)
		dec := json.NewDecoder(stdout)
		for {
			var r workerResult
			if dec.Decode(&r) != nil {
				return
			}
			results <- r
		}
	}(w.results)
	return nil
}

// stop ends the worker process: politely (stdin closed) or killed.
func (w *worker) stop(kill bool) {
	if w.cmd == nil {
		return
	}
	if kill {
		_ = w.cmd.Process.Kill()
	}
	w.stdin.Close()
	for range w.results { // drain until the reader sees EOF
	}
	_ = w.cmd.Wait()
	w.ended(w.cmd.ProcessState)
	w.cmd = nil
}

// do runs one job on the worker process, falling back to a process of its
// own for a job whose worker died under it.
func (w *worker) do(j *sweepJob) {
	if w.cmd != nil && w.served >= recycleAfter {
		w.stop(false)
	}
	if w.cmd == nil {
		if err := w.start(); err != nil {
			j.fail(fmt.Sprintf("%v", err), "none (no worker)")
			return
		}
	}
	w.served++
	line, _ := json.Marshal(append(j.args(), w.extra...))
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		w.crashed(j)
		return
	}
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	select {
	case r, ok := <-w.results:
		if !ok {
			w.crashed(j)
			return
		}
		j.wall = r.Wall
		j.record(r.Code, r.Out)
	case <-timer.C:
		w.stop(true)
		j.wall = w.timeout
		j.fail(fmt.Sprintf("hung: no result within %s (-job-timeout); the worker was killed\n%s", w.timeout, w.stderr.String()),
			fmt.Sprintf("none (timed out after %s)", w.timeout))
	}
}

// crashed handles a worker that died during j: j runs again in a process of
// its own, the way a sweep ran every job before workers, so that its
// output (a panic, the leftover-goroutine report) is j's alone.
func (w *worker) crashed(j *sweepJob) {
	w.stop(true)
	w.runJob(j)
	if j.ok {
		// The run passes on its own: the worker died of something else.
		j.fail("the job's worker process died, but the job passed when run alone:\n"+w.stderr.String()+"\n"+j.out, j.hash)
	}
}

// runJob runs j in a process of its own, killed after the timeout.
func (l *launcher) runJob(j *sweepJob) {
	timeout := l.timeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, l.self, append(j.args(), l.extra...)...)
	cmd.Env = l.env
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	j.wall = time.Since(start)
	l.ended(cmd.ProcessState)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		j.fail(fmt.Sprintf("hung: no result within %s (-job-timeout); killed\n%s", timeout, out.String()),
			fmt.Sprintf("none (timed out after %s)", timeout))
		return
	}
	if cmd.ProcessState == nil {
		j.fail(fmt.Sprintf("start the job's process: %v", err), "none (did not start)")
		return
	}
	j.record(cmd.ProcessState.ExitCode(), out.String())
}

// record reads a finished job's exit code and output: its trace hash (or,
// for equiv, every mode's), and whether it passed. Output without a hash
// is a run that crashed: a harness error whatever its code.
func (j *sweepJob) record(code int, out string) {
	j.out, j.code, j.ok, j.hash = out, code, code == exitOK, ""
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		if h, found := strings.CutPrefix(l, "trace-hash: "); found {
			j.hash = h
		}
		if h, found := strings.CutPrefix(l, "equiv-hashes: "); found {
			j.hash = h
		}
	}
	if j.hash == "" {
		j.ok, j.code = false, exitHarness
		j.hash = "none (the run crashed)"
	}
}

// fail marks j failed, a harness error (it hung, its process died), with a
// reason in place of output.
func (j *sweepJob) fail(out, hash string) {
	j.ok, j.code, j.out, j.hash = false, exitHarness, out, hash
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

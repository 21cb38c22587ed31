package proc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Worker is the parent's handle on one long-lived child that serves jobs
// (Serve): one JSON job per line on its stdin, one JSON result per line
// on its stdout. It starts the child on the first job and again after
// Stop.
type Worker struct {
	Path string
	Args []string
	Env  []string // nil is the parent's
	// Ended, when set, is told of every child process that ended (its
	// CPU time, for a throughput figure).
	Ended func(*os.ProcessState)

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	results chan json.RawMessage
	stderr  *TailBuffer
	served  int
}

// Served counts the jobs the current child took (0: none running).
func (w *Worker) Served() int { return w.served }

// Stderr is the tail of what the current (or last) child printed on its
// stderr: for a crash report.
func (w *Worker) Stderr() string {
	if w.stderr == nil {
		return ""
	}
	return w.stderr.String()
}

func (w *Worker) start() error {
	cmd := exec.Command(w.Path, w.Args...)
	env := w.Env
	if env == nil {
		env = os.Environ()
	}
	// A worker answers on its stdout; a result file named for this
	// process (by its own parent) is not the worker's to write.
	cmd.Env = withoutResult(env)
	w.stderr = &TailBuffer{Max: 64 << 10}
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
		return fmt.Errorf("start worker: %w", err)
	}
	w.cmd, w.stdin, w.served = cmd, stdin, 0
	w.results = make(chan json.RawMessage)
	go func(results chan<- json.RawMessage) {
		defer close(results)
		dec := json.NewDecoder(stdout)
		for {
			var r json.RawMessage
			if dec.Decode(&r) != nil {
				return // EOF, or garbage: the worker is no longer trusted
			}
			results <- r
		}
	}(w.results)
	return nil
}

// Stop ends the child: politely (stdin closed) or killed.
func (w *Worker) Stop(kill bool) {
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
	if w.Ended != nil && w.cmd.ProcessState != nil {
		w.Ended(w.cmd.ProcessState)
	}
	w.cmd, w.served = nil, 0
}

// Do sends job to the child (starting one when none runs) and decodes
// its answer into result. Errors: ErrHung when no answer came within
// timeout (the child is killed), ErrDied when the child ended or printed
// something that is not a result (it is stopped); both mean the job has
// no result, and the next Do starts a new child.
func (w *Worker) Do(job, result any, timeout time.Duration) error {
	if w.cmd == nil {
		if err := w.start(); err != nil {
			return err
		}
	}
	w.served++
	line, err := json.Marshal(job)
	if err != nil {
		return err
	}
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		w.Stop(true)
		return fmt.Errorf("%w: the worker took no job: %v", ErrDied, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r, ok := <-w.results:
		if !ok {
			w.Stop(true)
			return fmt.Errorf("%w: the worker ended without a result", ErrDied)
		}
		if err := json.Unmarshal(r, result); err != nil {
			w.Stop(true)
			return fmt.Errorf("%w: the worker's result does not parse: %v", ErrDied, err)
		}
		return nil
	case <-timer.C:
		w.Stop(true)
		return fmt.Errorf("%w: no result within %s; the worker was killed", ErrHung, timeout)
	}
}

// Serve is the worker side: it decodes one job per line of in, calls
// handle and writes its result as one JSON line to out, until in ends.
// A line that is not a job ends it with an error; so does out failing
// (the parent is gone). Whatever else the worker prints must not reach
// out: point os.Stdout elsewhere before calling it with the real stdout.
func Serve[J any](in io.Reader, out io.Writer, handle func(J) any) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var job J
		if err := json.Unmarshal(sc.Bytes(), &job); err != nil {
			return fmt.Errorf("bad job %q: %v", sc.Text(), err)
		}
		if err := enc.Encode(handle(job)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// TailBuffer keeps the last Max bytes written to it.
type TailBuffer struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

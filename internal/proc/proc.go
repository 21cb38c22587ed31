// Package proc runs child processes of the runner (relaysim) for every
// fan-out: a sweep's workers and its process-per-job runs, explore -j's
// shards, shrink -isolate's candidates and the mutant catalog's runs.
// A parent never reads a child's human output to judge it: the child
// hands back a typed result, and what it prints is passed through (or
// kept) for people only.
//
// Two protocols, one per shape of fan-out:
//
//   - One-shot (Run): the parent names a result file in the child's
//     environment (EnvResult); the child writes its typed result there as
//     one JSON value (WriteResult; the last write wins) and exits. The
//     parent decodes the file (Outcome.Decode). A child that hung, died
//     before writing it or wrote garbage is a harness error (Outcome.Err,
//     Decode's error), never a verdict.
//   - Worker (Worker, Serve): a long-lived child reads one JSON job per
//     line on its stdin and answers one JSON result per line on its
//     stdout; anything else it prints goes to its stderr, whose tail the
//     parent keeps for a crash report. A worker that dies under a job or
//     hangs past the job's limit is an error of Do (ErrDied, ErrHung).
package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// EnvResult names the file a one-shot child writes its typed result to.
const EnvResult = "RELAYSIM_RESULT"

// WriteResult is the child side of Run: when the parent named a result
// file (EnvResult), it writes v there as JSON, replacing what an earlier
// call wrote (written aside and renamed, so that a child killed mid-write
// leaves the earlier result or none, never half of one). Without
// EnvResult it does nothing.
func WriteResult(v any) error {
	path := os.Getenv(EnvResult)
	if path == "" {
		return nil
	}
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Spec is one child process to run to its end.
type Spec struct {
	Path string
	Args []string
	Dir  string   // "" is the parent's
	Env  []string // nil is the parent's; EnvResult is added either way
	// Timeout, when > 0, kills the child after that much wall time.
	Timeout time.Duration
	// Stdout and Stderr receive what the child prints (nil discards it):
	// for people, or for a report of a failure; never judged.
	Stdout, Stderr io.Writer
}

// Outcome is how a child ended and the typed result it wrote.
type Outcome struct {
	Exit     int  // the exit code; -1 when it was killed or did not start
	TimedOut bool // killed at Spec.Timeout (or the context's end)
	Wall     time.Duration
	CPU      time.Duration // user + system time of the child
	// Result is the JSON the child wrote (WriteResult); nil when none.
	Result []byte
	// Err is a harness error: the child did not start, hung, or ended
	// without a result. A nil Err still needs Decode to accept the result.
	Err error
}

// Decode reads the child's result into v; an error when the child ended
// without one (Err) or what it wrote does not parse as v.
func (o Outcome) Decode(v any) error {
	if o.Err != nil {
		return o.Err
	}
	if err := json.Unmarshal(o.Result, v); err != nil {
		return fmt.Errorf("the child's result does not parse: %v: %q", err, shorten(o.Result, 200))
	}
	return nil
}

// Run runs one child under ctx and s.Timeout and collects its result.
func Run(ctx context.Context, s Spec) Outcome {
	dir, err := os.MkdirTemp("", "relaysim-proc-*")
	if err != nil {
		return Outcome{Exit: -1, Err: fmt.Errorf("result file: %w", err)}
	}
	defer os.RemoveAll(dir)
	result := filepath.Join(dir, "result.json")
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, s.Path, s.Args...)
	cmd.Dir = s.Dir
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(withoutResult(env), EnvResult+"="+result)
	cmd.Stdout, cmd.Stderr = orDiscard(s.Stdout), orDiscard(s.Stderr)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	o := Outcome{Exit: -1, Wall: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		o.CPU = ps.UserTime() + ps.SystemTime()
		o.Exit = ps.ExitCode()
	}
	switch {
	case ctx.Err() != nil && err != nil:
		o.TimedOut, o.Exit = true, -1
		o.Err = fmt.Errorf("%w: no result within %s; killed", ErrHung, o.Wall.Round(time.Millisecond))
		return o
	case cmd.ProcessState == nil:
		o.Err = fmt.Errorf("start %s: %w", filepath.Base(s.Path), err)
		return o
	}
	b, rerr := os.ReadFile(result)
	if rerr != nil {
		o.Err = fmt.Errorf("%w: exit %d without a result", ErrDied, o.Exit)
		return o
	}
	o.Result = b
	return o
}

// ErrHung and ErrDied are the ways a child ends without a result.
var (
	ErrHung = errors.New("hung")
	ErrDied = errors.New("died")
)

func withoutResult(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !bytes.HasPrefix([]byte(kv), []byte(EnvResult+"=")) {
			out = append(out, kv)
		}
	}
	return out
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func shorten(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

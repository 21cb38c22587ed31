package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is its own fake child: run again with envFake set, it
// plays the child named there instead of running the tests.
const envFake = "PROC_TEST_FAKE_CHILD"

type result struct {
	Verdict string `json:"verdict"`
	N       int    `json:"n"`
}

func TestMain(m *testing.M) {
	if kind := os.Getenv(envFake); kind != "" {
		os.Exit(fake(kind))
	}
	os.Exit(m.Run())
}

// fake is the child: what it prints for people, and how it ends.
func fake(kind string) int {
	fmt.Fprintln(os.Stderr, "child stderr: "+kind)
	if kind != "worker" { // a worker's stdout is the protocol's
		fmt.Println("relaysim FAILED  violated: no-loss: a human line the parent must not judge")
	}
	switch kind {
	case "ok":
		_ = WriteResult(result{Verdict: "ok", N: 1})
		_ = WriteResult(result{Verdict: "violation", N: 2}) // the last write wins
		return 1
	case "crash":
		panic("boom")
	case "hang":
		time.Sleep(time.Minute)
	case "test": // a failing go test binary: two properties, one twice
		_ = AddViolation("no-loss", "violated: no-loss: room r1 seq 3: lost\nmore")
		_ = AddViolation("determinism", "seed 0x1 mode bulk replayed differently")
		_ = AddViolation("no-loss", "violated: no-loss: room r2 seq 1: lost")
		return 1
	case "garbage":
		path := os.Getenv(EnvResult)
		_ = os.WriteFile(path, []byte("violated: no-loss: not json\n"), 0o644)
		return 1
	case "worker":
		err := Serve(os.Stdin, os.Stdout, func(j []int) any {
			switch j[0] {
			case 1: // dies under the job
				os.Exit(2)
			case 2: // hangs
				time.Sleep(time.Minute)
			case 3: // prints garbage on the protocol
				fmt.Println("violated: no-loss: garbage")
				return nil
			}
			_ = WriteResult(result{Verdict: "from a worker"}) // must go nowhere
			return result{Verdict: "ok", N: j[0] * 10}
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	return 0
}

func spec(kind string, timeout time.Duration, stdout, stderr *bytes.Buffer) Spec {
	return Spec{Path: os.Args[0], Env: append(os.Environ(), envFake+"="+kind), Timeout: timeout, Stdout: stdout, Stderr: stderr}
}

// A child's typed result is read from its result file, whatever it
// prints; what it prints is passed through.
func TestRunReadsTheTypedResult(t *testing.T) {
	var out, errs bytes.Buffer
	o := Run(context.Background(), spec("ok", time.Minute, &out, &errs))
	require.NoError(t, o.Err)
	assert.Equal(t, 1, o.Exit)
	var r result
	require.NoError(t, o.Decode(&r))
	assert.Equal(t, result{Verdict: "violation", N: 2}, r)
	assert.Contains(t, out.String(), "a human line")
	assert.Contains(t, errs.String(), "child stderr: ok")
}

// A child that crashes, hangs past its limit or writes garbage is a
// harness error: Decode fails, never a verdict.
func TestRunHarnessErrors(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		timeout time.Duration
		is      error
		says    string
	}{
		{"crash", time.Minute, ErrDied, "exit 2 without a result"},
		{"hang", 300 * time.Millisecond, ErrHung, "no result within"},
		{"garbage", time.Minute, nil, "does not parse"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var out, errs bytes.Buffer
			start := time.Now()
			o := Run(context.Background(), spec(tc.kind, tc.timeout, &out, &errs))
			assert.Less(t, time.Since(start), 30*time.Second)
			var r result
			err := o.Decode(&r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Zero(t, r)
			assert.Equal(t, tc.kind == "hang", o.TimedOut)
		})
	}
	o := Run(context.Background(), Spec{Path: "/nonexistent/relaysim"})
	require.Error(t, o.Err)
	assert.Equal(t, -1, o.Exit)
}

// A result file named by the parent's own parent is not the child's:
// the child gets a file of its own.
func TestRunNamesItsOwnResultFile(t *testing.T) {
	t.Setenv(EnvResult, "/nonexistent/outer.json")
	o := Run(context.Background(), Spec{Path: os.Args[0], Env: append(os.Environ(), envFake+"=ok")})
	var r result
	require.NoError(t, o.Decode(&r))
	assert.Equal(t, 2, r.N)
}

// A worker serves jobs one after another; one that dies, hangs or answers
// garbage costs its job (an error, no result) and the next job gets a
// new worker.
func TestWorker(t *testing.T) {
	ended := 0
	w := &Worker{Path: os.Args[0], Env: append(os.Environ(), envFake+"=worker"), Ended: func(*os.ProcessState) { ended++ }}
	defer w.Stop(true)
	var r result
	require.NoError(t, w.Do([]int{4}, &r, time.Minute))
	assert.Equal(t, result{Verdict: "ok", N: 40}, r)
	require.NoError(t, w.Do([]int{5}, &r, time.Minute))
	assert.Equal(t, 50, r.N)
	assert.Equal(t, 2, w.Served())

	for _, tc := range []struct {
		job  int
		is   error
		says string
	}{
		{1, ErrDied, "ended without a result"},
		{2, ErrHung, "no result within"},
		{3, ErrDied, "ended without a result"}, // garbage: the reader stops trusting it
	} {
		r = result{}
		err := w.Do([]int{tc.job}, &r, 500*time.Millisecond)
		require.Error(t, err, "job %d", tc.job)
		assert.ErrorIs(t, err, tc.is)
		assert.Contains(t, err.Error(), tc.says)
		assert.Zero(t, r)
		assert.Equal(t, 0, w.Served(), "the worker was stopped")
		require.NoError(t, w.Do([]int{6}, &r, time.Minute), "a new worker after job %d", tc.job)
		assert.Equal(t, 60, r.N)
	}
	w.Stop(false)
	assert.Equal(t, 4, ended)
}

// A worker does not inherit a result file named for its parent: the
// parent's result is the parent's to write.
func TestWorkerDoesNotInheritTheResultFile(t *testing.T) {
	outer := filepath.Join(t.TempDir(), "outer.json")
	t.Setenv(EnvResult, outer)
	w := &Worker{Path: os.Args[0], Env: append(os.Environ(), envFake+"=worker")}
	defer w.Stop(true)
	var r result
	require.NoError(t, w.Do([]int{7}, &r, time.Minute))
	assert.Equal(t, 70, r.N)
	w.Stop(false)
	assert.NoFileExists(t, outer)
}

// Serve: one result line per job line; a line that is not a job is an
// error, not a job.
func TestServe(t *testing.T) {
	var out bytes.Buffer
	err := Serve(strings.NewReader("[1]\n[2]\n"), &out, func(j []int) any { return j[0] + 1 })
	require.NoError(t, err)
	assert.Equal(t, "2\n3\n", out.String())
	err = Serve(strings.NewReader("[1]\nnot a job\n"), &out, func(j []int) any { return 0 })
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrHung))
}

// A test binary's violations accumulate in its result, each property
// once with its first evidence line; a line that does not say what it
// violated is prefixed so that it does.
func TestAddViolation(t *testing.T) {
	var out, errs bytes.Buffer
	o := Run(context.Background(), spec("test", time.Minute, &out, &errs))
	require.NoError(t, o.Err)
	var r TestResult
	require.NoError(t, o.Decode(&r))
	assert.Equal(t, TestResult{Summary: "violation", Exit: 1, Command: "test",
		Violations: []string{"no-loss", "determinism"},
		Evidence: []string{"violated: no-loss: room r1 seq 3: lost",
			"violated: determinism: seed 0x1 mode bulk replayed differently"}}, r)
	assert.Equal(t, o.Exit, r.Exit)
}

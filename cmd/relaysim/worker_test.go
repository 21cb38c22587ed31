package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRunner writes a shell script standing in for the relaysim binary:
// as "sweep-worker" it runs worker, as anything else (a job in a process
// of its own) it runs alone.
func fakeRunner(t *testing.T, worker, alone string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "relaysim")
	script := "#!/bin/sh\nif [ \"$1\" = sweep-worker ]; then\n" + worker + "\nfi\n" + alone + "\n"
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

// A worker that dies under a job does not take the sweep down: the job
// runs again in a process of its own, and its own output (the panic) is
// the job's result. The next job gets a new worker.
func TestWorkerCrashFallsBackToAProcessPerJob(t *testing.T) {
	self := fakeRunner(t,
		`read job; echo "worker: dying" >&2; exit 2`,
		`echo "panic: boom in $1 $3"; exit 2`)
	w := &worker{launcher: &launcher{self: self, timeout: time.Minute, env: os.Environ()}}
	defer w.stop(true)
	j := &sweepJob{seed: 7, mode: "bulk"}
	w.do(j)
	assert.False(t, j.ok)
	assert.Equal(t, "none (the run crashed)", j.hash)
	assert.Contains(t, j.out, "panic: boom in run 0x7")
	kind, msg := failureOf(j.out)
	assert.Equal(t, []string{"crash", "boom in run 0x7"}, []string{kind, msg})

	j2 := &sweepJob{seed: 8, mode: equivMode}
	w.do(j2)
	assert.Contains(t, j2.out, "panic: boom in equiv 0x8")
}

// A hung job is killed after -job-timeout and reported as hung; the sweep
// goes on.
func TestWorkerHangIsKilled(t *testing.T) {
	self := fakeRunner(t, `read job; exec sleep 60`, `exit 3`)
	w := &worker{launcher: &launcher{self: self, timeout: 300 * time.Millisecond, env: os.Environ()}}
	defer w.stop(true)
	j := &sweepJob{seed: 9, mode: "single"}
	start := time.Now()
	w.do(j)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.False(t, j.ok)
	assert.Equal(t, "none (timed out after 300ms)", j.hash)
	kind, _ := failureOf(j.out)
	assert.Equal(t, "timeout", kind)
}

// A job is judged by its typed result, never by what it prints: a worker
// that answers garbage is a crash (the job runs alone), a job run alone
// that prints a banner and a trace hash but writes no result is a
// harness error, and one whose result disagrees with its exit code too.
// A result that is whole is the verdict, whatever the text says.
func TestSweepJudgesTypedResultsOnly(t *testing.T) {
	banner := `echo "violated: no-loss: room r1 seq 3: lost"; echo "trace-hash: 0badc0de"`
	result := `echo '{"summary":"violation","exit":1,"command":"run","violations":["no-loss"],"trace_hash":"c0ffee","evidence":["violated: no-loss: typed"]}' > "$RELAYSIM_RESULT"`
	for _, tc := range []struct {
		name, worker, alone string
		code                int
		hash, evidence      string
	}{
		{"garbage, no result", `read job; echo "violated: no-loss: not a result"`, banner + "; exit 1", exitHarness, "none (the run crashed)", ""},
		{"result disagrees with the exit", `read job; exit 2`, result + "; " + banner + "; exit 3", exitHarness, "none (the run crashed)", ""},
		{"typed result", `read job; exit 2`, banner + "; " + result + "; exit 1", exitFail, "c0ffee", "violated: no-loss: typed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &worker{launcher: &launcher{self: fakeRunner(t, tc.worker, tc.alone), timeout: time.Minute, env: os.Environ()}}
			defer w.stop(true)
			j := &sweepJob{seed: 7, mode: "bulk"}
			w.do(j)
			assert.False(t, j.ok)
			assert.Equal(t, tc.code, j.code)
			assert.Equal(t, tc.hash, j.hash)
			assert.Equal(t, tc.evidence, j.evidence())
			assert.Contains(t, j.out, "trace-hash: 0badc0de", "the text is kept for people")
		})
	}
}

// The worker side: one JSON result per job line, each what `relaysim`
// would have printed for those arguments.
func TestSweepWorkerProtocol(t *testing.T) {
	in := strings.NewReader(`["run","-mode","multi"]` + "\n" + `["help"]` + "\n")
	var proto bytes.Buffer
	require.Equal(t, exitOK, cmdSweepWorker(in, &proto))
	dec := json.NewDecoder(&proto)
	var r workerResult
	require.NoError(t, dec.Decode(&r))
	assert.Equal(t, exitUsage, r.Code)
	assert.Contains(t, r.Out, `unknown mode "multi"`)
	require.NoError(t, dec.Decode(&r))
	assert.Equal(t, exitOK, r.Code)
	assert.Contains(t, r.Out, "usage: relaysim")
	assert.Nil(t, r.Summary, "help writes no summary")
	assert.False(t, dec.More())
}

// On a terminal the progress line is rewritten in place and says how fast
// and how long; in a log it is a plain line every 5% with counts only.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 4, shard{2, 4})
	p.tty = true
	t0 := p.start
	p.now = func() time.Time { return t0.Add(2 * time.Second) }
	p.done(true)
	p.done(false)
	p.finish()
	assert.Equal(t, "\rsweep 2/4: 1/4 runs, 0 failed, 0.5 runs/s, ETA 6s\x1b[K"+
		"\rsweep 2/4: 2/4 runs, 1 failed, 1.0 runs/s, ETA 2s\x1b[K\n", b.String())

	b.Reset()
	p = newProgress(&b, 3, shard{1, 1})
	assert.False(t, p.tty, "a buffer is not a terminal")
	for range 3 {
		p.done(true)
	}
	p.finish()
	assert.Equal(t, "sweep: 1/3 runs, 0 failed\nsweep: 2/3 runs, 0 failed\nsweep: 3/3 runs, 0 failed\n", b.String())
}

// A sweep's processes get the sweep's GOGC, and a share of the CPUs, unless
// the caller chose them.
func TestJobEnv(t *testing.T) {
	base := []string{"HOME=/h", "PATH=/bin"}
	for _, c := range []struct{ jobs, procs, want int }{{2, 2, 1}, {1, 2, 2}, {4, 2, 1}, {2, 8, 4}, {3, 8, 2}, {0, 2, 2}} {
		got := jobEnv(base, c.jobs, c.procs)
		want := []string{"HOME=/h", "PATH=/bin", "GOGC=" + strconv.Itoa(jobGOGC), "GOMAXPROCS=" + strconv.Itoa(c.want)}
		if !slices.Equal(got, want) {
			t.Fatalf("jobEnv(%q, %d, %d) = %q, want %q", base, c.jobs, c.procs, got, want)
		}
	}
	if len(base) != 2 {
		t.Fatalf("jobEnv changed its argument: %q", base)
	}
	mine := []string{"GOGC=50", "PATH=/bin", "GOMAXPROCS=3"}
	if got := jobEnv(mine, 2, 2); !slices.Equal(got, mine) {
		t.Fatalf("jobEnv(%q) = %q: the caller's GOGC and GOMAXPROCS must stay", mine, got)
	}
}

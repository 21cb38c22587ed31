package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/mutants"
	"github.com/relaysim/relaysim/sim"
)

// A run's exit code is its class: violation 1, harness error 3; a run that
// found a violation is a violation even when it also broke down.
func TestExitCodeClasses(t *testing.T) {
	leak := model.Violation{Property: model.PropGoroutineLeak, Detail: "1 goroutine(s) left after teardown"}
	for _, tc := range []struct {
		name string
		res  sim.Result
		want int
	}{
		{"every property held", sim.Result{}, exitOK},
		{"violation", sim.Result{Violations: []model.Violation{{Property: model.PropNoLoss}}}, exitFail},
		{"leftover goroutines are the goroutine-leak property", sim.Result{Violations: []model.Violation{leak}}, exitFail},
		{"cluster did not start", sim.Result{Err: errors.New("start cluster: boom")}, exitHarness},
		{"bubble deadlock", sim.Result{BubbleErr: errors.New("deadlock: main bubble goroutine has exited")}, exitHarness},
		{"violation and harness error", sim.Result{Violations: []model.Violation{leak}, Err: errors.New("write history: disk full")}, exitFail},
	} {
		assert.Equal(t, tc.want, exitCode(&tc.res), tc.name)
	}
	assert.NotEqual(t, exitUsage, exitHarness)
	assert.Equal(t, exitFail, worse(exitHarness, exitFail))
	assert.Equal(t, exitHarness, worse(exitOK, exitHarness))
	assert.Equal(t, exitFail, worse(exitFail, exitOK))
}

// The summary line is what the mutant catalog reads (mutants.ParseSummary):
// the two sides agree on it.
func TestSummaryLineReadsBack(t *testing.T) {
	res := &sim.Result{TraceHash: "c0ffee", Err: errors.New("write history: disk full"), Violations: []model.Violation{
		{Property: model.PropOrdering}, {Property: model.PropNoLoss}, {Property: model.PropOrdering},
	}}
	res.Config.Seed, res.Config.Mode = 0x2a, "bulk"
	var out bytes.Buffer
	printSummary(&out, "run", res, exitCode(res), "go tool relaysim replay -seed 0x2a -mode bulk")
	require.Equal(t, 1, strings.Count(out.String(), "\n"))
	s, ok := mutants.ParseSummary("result: FAIL\n" + out.String() + "trace-hash: c0ffee\n")
	require.True(t, ok, out.String())
	assert.Equal(t, mutants.Summary{Summary: "violation", Exit: 1, Command: "run", Seed: "0x2a", Mode: "bulk",
		Violations: []string{"per-room-ordering", "no-loss"}, Error: "write history: disk full", TraceHash: "c0ffee",
		Replay:   "go tool relaysim replay -seed 0x2a -mode bulk",
		Evidence: []string{"error:  write history: disk full", "violated: per-room-ordering:", "violated: no-loss:"}}, s)
}

// An empty shard is legitimate but never silent; the counts say seeds and
// runs apart, and the last line keeps its format.
func TestSweepCountsSeedsAndRunsApart(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, exitOK, run([]string{"sweep", "-seeds", "1-2", "-shard", "3/4"}, &out, &errb))
	assert.Equal(t, "sweep: shard 3/4 of -seeds 1-2 holds no seed: nothing ran (shard i/n takes every n-th seed of the range from the i-th)\n"+
		"sweep: 0 seeds x 3 runs (bulk, equiv, churn-only bulk) = 0 runs; failed: 0 seeds, 0 runs\n"+
		"runs: 0 failed: 0\n", out.String())

	sp, err := parseSweep([]string{"-seeds", "1-3", "-mode", "both", "-churn-variant=false"}, func(string) string { return "" }, &bytes.Buffer{})
	require.NoError(t, err)
	require.Len(t, sp.jobs, 9)
	for _, j := range sp.jobs {
		j.ok = true
	}
	sp.jobs[0].ok, sp.jobs[0].code = false, exitHarness // seed 1: hung
	out.Reset()
	assert.Equal(t, exitHarness, sp.verdict(&out), "a hang alone")
	sp.jobs[1].ok, sp.jobs[1].code = false, exitFail // seed 1 again
	sp.jobs[8].ok, sp.jobs[8].code = false, 2        // seed 3: the Go runtime crashed
	out.Reset()
	assert.Equal(t, exitFail, sp.verdict(&out), "a violation outranks a hang")
	assert.Equal(t, "sweep: 3 seeds x 3 runs (single, bulk, equiv) = 9 runs; failed: 2 seeds, 3 runs\nruns: 9 failed: 3\n", out.String())
}

// Under a catalog mutant every printed command builds the mutant again:
// the build sets RELAYSIM_OVERLAY (mutants.Apply), and the banner's and
// the sweep's replay commands carry it.
func TestPrintedCommandsKeepTheOverlay(t *testing.T) {
	t.Setenv(mutants.OverlayEnv, "/tmp/m/overlay.json")
	j := &sweepJob{seed: 3, mode: "bulk"}
	assert.Equal(t, "go tool -overlay=/tmp/m/overlay.json relaysim replay -seed 0x3 -mode bulk -users=5 -trace trace.txt", j.replay([]string{"-users=5"}))
	f := newRunFlags("equiv", &bytes.Buffer{})
	require.NoError(t, f.parse([]string{"-seed", "0x3", "-users", "5"}))
	assert.Equal(t, "go tool -overlay=/tmp/m/overlay.json relaysim equiv -seed 0x3 -users=5", equivCommand(f))
}

// run and equiv print the summary line just before their last line, and
// it says what the last line says.
func TestRunAndEquivPrintTheSummaryLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildRunner(t)
	small := []string{"-seed", "0x1", "-nodes", "2", "-users", "3", "-rooms", "1", "-duration", "1s", "-drain", "5s"}
	for _, cmd := range []string{"run", "equiv"} {
		out, err := exec.Command(bin, append([]string{cmd}, small...)...).Output()
		require.NoError(t, err, "%s", out)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		require.GreaterOrEqual(t, len(lines), 2)
		s, ok := mutants.ParseSummary(lines[len(lines)-2])
		require.True(t, ok, "%s: line before the last: %q", cmd, lines[len(lines)-2])
		_, hash, _ := strings.Cut(lines[len(lines)-1], ": ")
		assert.Equal(t, mutants.Summary{Summary: "ok", Exit: 0, Command: cmd, Seed: "0x1", Mode: map[string]string{"run": "bulk", "equiv": "all"}[cmd],
			Violations: []string{}, TraceHash: hash}, s, cmd)
	}
}

// A run whose history cannot be written is a harness error (exit 3), not
// a violation: it found none, and the record asked for is not whole.
func TestHistoryWriteFailureIsAHarnessError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	bin := buildRunner(t)
	out, err := exec.Command(bin, "run", "-seed", "3", "-nodes", "2", "-users", "3", "-duration", "1s", "-drain", "3s", "-history", "/dev/full").Output()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, out)
	assert.Equal(t, exitHarness, exit.ExitCode())
	s, ok := mutants.ParseSummary(string(out))
	require.True(t, ok, "%s", out)
	assert.Equal(t, "harness-error", s.Summary)
	assert.Empty(t, s.Violations)
	assert.Contains(t, s.Error, "write history")
}

// TestSweepCoverageTalliesRuns: the sweep's coverage line counts, per
// item, the runs whose typed summary says they met it; runs without a
// summary (a crash) or without coverage (equiv) are not counted.
func TestSweepCoverageTalliesRuns(t *testing.T) {
	sum := func(cov map[string]int) *runSummary {
		return &runSummary{Summary: classOK, Command: "run", Coverage: cov}
	}
	jobs := []*sweepJob{
		{summary: sum(map[string]int{"steals": 2, "non-ascii-names": 0})},
		{summary: sum(map[string]int{"steals": 1, "non-ascii-names": 4})},
		{summary: sum(nil)},
		{out: "panic: boom\n"},
	}
	got := sweepCoverage(jobs)
	assert.Contains(t, got, "coverage: of 2 runs, met: ")
	assert.Contains(t, got, "non-ascii-names 1,")
	assert.Contains(t, got, "steals 2,")
	assert.Equal(t, "", sweepCoverage(jobs[2:]))
}

// summaryOf reads the summary line back from a run's output (nil: none),
// as a reader of the printed text would.
func summaryOf(out string) *runSummary {
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, `{"summary":`) {
			continue
		}
		var s runSummary
		if json.Unmarshal([]byte(l), &s) == nil {
			return &s
		}
	}
	return nil
}

package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

func TestParseRequireProbes(t *testing.T) {
	got, err := parseRequireProbes("")
	require.NoError(t, err)
	assert.Nil(t, got)
	got, err = parseRequireProbes("all")
	require.NoError(t, err)
	assert.Len(t, got, len(system.Probes()))
	got, err = parseRequireProbes(system.ProbeStreamGaveUp + ", " + system.ProbeExecQueued + "," + system.ProbeStreamGaveUp)
	require.NoError(t, err)
	assert.Equal(t, []string{system.ProbeStreamGaveUp, system.ProbeExecQueued}, got)
	_, err = parseRequireProbes("stream.gave-up,no.such-probe")
	assert.ErrorContains(t, err, `unknown probe "no.such-probe"`)
	_, err = parseRequireProbes(",")
	assert.Error(t, err)
}

// TestSweepProbeVerdict: the sweep tallies runs per probe from the typed
// summaries, names the probes never hit, and fails on a required one.
func TestSweepProbeVerdict(t *testing.T) {
	jobs := []*sweepJob{
		{summary: &runSummary{Probes: map[string]int{system.ProbeExecQueued: 3, system.ProbeStreamBroken: 1}}},
		{summary: &runSummary{Probes: map[string]int{system.ProbeExecQueued: 1}}},
		{summary: &runSummary{}},
		{}, // a crash: no summary, not counted
	}
	sp := &sweepSpec{jobs: jobs}
	var out bytes.Buffer
	assert.Equal(t, exitOK, sp.probeVerdict(&out))
	text := out.String()
	assert.Contains(t, text, "probes hit, of 3 runs:\n  executor.task-queued 2, stream.broken 1\n")
	assert.Contains(t, text, fmt.Sprintf("probes: 2/%d hit\n", len(system.Probes())))
	assert.Contains(t, text, "never hit: executor.grew-past-core, ")

	sp.o.requireProbes = []string{system.ProbeExecQueued, system.ProbeStreamGaveUp}
	out.Reset()
	assert.Equal(t, exitFail, sp.probeVerdict(&out))
	assert.Contains(t, out.String(), "FAIL probes: required, never hit in 3 runs: stream.gave-up\n")
	assert.Equal(t, []string{system.ProbeStreamGaveUp}, sp.unhit)
}

func TestSweepRequireProbesUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := cmdSweep([]string{"-seeds", "1-2", "-require-probes", "nope"}, &stdout, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
	assert.Contains(t, stderr.String(), `unknown probe "nope"`)
}

// A sweep that fails only on required probes says so on its last line,
// and a -cover sweep's tally, saved beside its counters, merges across
// shards into the share the whole sweep prints.
func TestSweepProbesLastLineAndMerge(t *testing.T) {
	jobs := []*sweepJob{
		{ok: true, summary: &runSummary{Probes: map[string]int{system.ProbeExecQueued: 1}}},
		{ok: true, summary: &runSummary{Probes: map[string]int{system.ProbeStreamBroken: 2}}},
	}
	sp := &sweepSpec{jobs: jobs, nseeds: 2, perSeed: 1, modes: "stream"}
	sp.o.requireProbes = []string{system.ProbeStreamGaveUp}
	var out bytes.Buffer
	assert.Equal(t, exitFail, sp.verdict(&out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Equal(t, "runs: 2 failed: 0 required-probes-unhit: 1", lines[len(lines)-1])

	n := len(system.Probes())
	whole := tallyProbes(jobs)
	assert.Equal(t, fmt.Sprintf("probes 2/%d", n), whole.share())
	a, b := t.TempDir(), t.TempDir()
	require.NoError(t, tallyProbes(jobs[:1]).save(a))
	require.NoError(t, tallyProbes(jobs[1:]).save(b))
	merged, ok, err := mergeTallies([]string{a, b})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, whole.share(), merged.share())
	assert.Equal(t, 2, merged.runs)
	// A command that saved no tally (a run, an explore): no share claimed.
	_, ok, err = mergeTallies([]string{a, t.TempDir()})
	require.NoError(t, err)
	assert.False(t, ok)
}

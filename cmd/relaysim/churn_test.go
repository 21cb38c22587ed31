package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// run -churn-only is the churn-only variant: no fault whatever the fault
// flags say (as -calm), no upgrade, and its replay command says it.
func TestRunChurnOnlyFlag(t *testing.T) {
	f := newRunFlags("run", &bytes.Buffer{})
	require.NoError(t, f.parse([]string{"-seed", "0x5", "-mode", "stream", "-churn-only", "-max-crashes", "3", "-churn", "2"}))
	assert.True(t, f.cfg.ChurnOnly)
	assert.False(t, f.cfg.Calm)
	assert.Equal(t, sim.NoFaults(), f.cfg.Bounds, "the fault flags are overridden, as under -calm")
	assert.Equal(t, 2.0, f.cfg.Churn, "-churn is still the workload's churn rate")
	assert.Equal(t, "go tool relaysim replay -seed 0x5 -mode stream -churn=2 -churn-only=true -max-crashes=0 -trace trace.txt", replayCommand(f))

	// The replay command parses back into the same configuration.
	r := newRunFlags("replay", &bytes.Buffer{})
	require.NoError(t, r.parse(argsOf(t, replayCommand(f))))
	assert.Equal(t, f.cfg.ChurnOnly, r.cfg.ChurnOnly)
	assert.Equal(t, f.cfg.Bounds, r.cfg.Bounds)
	assert.Equal(t, system.ModeStream, r.cfg.Mode)

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-churn-only", "-upgrade", "v1:v3"}, "-churn-only and -upgrade exclude each other"},
		{[]string{"-churn-only", "-calm"}, "churn-only and calm exclude each other"},
	} {
		f := newRunFlags("run", &bytes.Buffer{})
		assert.ErrorContains(t, f.parse(bad.args), bad.want, bad.args)
	}
}

// argsOf is a printed replay command's arguments after the subcommand.
func argsOf(t *testing.T, cmd string) []string {
	t.Helper()
	fields := strings.Fields(cmd)
	for i, f := range fields {
		if f == "relaysim" && i+1 < len(fields) {
			return fields[i+2:]
		}
	}
	t.Fatalf("no subcommand in %q", cmd)
	return nil
}

// A sweep runs each seed's churn-only variant in each swept mode by
// default, counts it as runs of its own, and prints for it a replay
// command that runs exactly that variant.
func TestSweepChurnVariant(t *testing.T) {
	none := func(string) string { return "" }
	sp, err := parseSweep([]string{"-seeds", "5-6", "-mode", "all", "-users", "5"}, none, &bytes.Buffer{})
	require.NoError(t, err)
	var labels []string
	for _, j := range sp.jobs {
		if j.seed == 5 {
			labels = append(labels, j.label())
		}
	}
	assert.Equal(t, []string{"single", "bulk", "stream", "equiv", "single churn-only", "bulk churn-only", "stream churn-only"}, labels)
	assert.Equal(t, 7, sp.perSeed)
	assert.Equal(t, "single, bulk, stream, equiv, churn-only single, churn-only bulk, churn-only stream", sp.modes)

	j := sp.jobs[6]
	require.True(t, j.churn)
	// Seed 5 is one the sweep runs with wide identifiers (sim.SweepAlphabet).
	assert.Equal(t, []string{"run", "-seed", "0x5", "-mode", "stream", "-churn-only", "-alphabet=wide"}, j.args())
	replay := j.replay(sp.extra)
	assert.Equal(t, "go tool relaysim replay -seed 0x5 -mode stream -churn-only -alphabet=wide -users=5 -trace trace.txt", replay)
	f := newRunFlags("replay", &bytes.Buffer{})
	require.NoError(t, f.parse(argsOf(t, replay)))
	assert.True(t, f.cfg.ChurnOnly)
	assert.Equal(t, sim.NoFaults(), f.cfg.Bounds)
	assert.Equal(t, system.ModeStream, f.cfg.Mode)
	assert.Equal(t, 5, f.cfg.Users)
	assert.Equal(t, sim.AlphabetWide, f.cfg.Alphabet)

	// The JUnit case and the FAIL line name the variant.
	j.ok, j.out = false, "violated: timely-live-delivery: ...\n"
	assert.Equal(t, "seed=0x5 mode=stream churn-only", junitCaseOf(j, sp.extra).Name)
	var out bytes.Buffer
	sp.jobs = []*sweepJob{j}
	sp.verdict(&out)
	assert.Contains(t, out.String(), "failed: 1 seeds, 1 runs")

	// Off on request; off by itself for an upgrade or calm sweep, and a
	// usage error when asked for with one.
	for _, args := range [][]string{{"-churn-variant=false"}, {"-upgrade", "v1:v3"}, {"-calm"}} {
		sp, err := parseSweep(append([]string{"-seeds", "5-6"}, args...), none, &bytes.Buffer{})
		require.NoError(t, err, args)
		for _, j := range sp.jobs {
			assert.False(t, j.churn, args)
		}
		assert.NotContains(t, sp.modes, "churn", args)
	}
	_, err = parseSweep([]string{"-seeds", "5-6", "-upgrade", "v1:v3", "-churn-variant"}, none, &bytes.Buffer{})
	assert.ErrorContains(t, err, "-churn-variant and -upgrade or -calm exclude each other")
	// -churn, the workload's churn rate, still reaches every job.
	sp, err = parseSweep([]string{"-seeds", "5-5", "-churn", "3"}, none, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{"-churn=3"}, sp.extra)
}

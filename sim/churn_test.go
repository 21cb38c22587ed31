package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// The churn-only variant runs the seed's own workload (the same actions,
// membership changes under traffic included) with no fault at all, says so
// in its header, replays byte for byte, and is judged fault-free
// (model.History.FaultFree); the seed's default run keeps its faults and
// its excuses.
func TestChurnVariant(t *testing.T) {
	seed := Seed(0xc4a2)
	def := DefaultConfig()
	def.Seed, def.Mode, def.KeepTrace = seed, system.ModeStream, true
	def.Upgrade = &Upgrade{From: 1, To: 3}
	cfg := def.ChurnVariant(system.ModeStream)
	require.True(t, cfg.ChurnOnly)
	assert.Nil(t, cfg.Upgrade, "a churn-only run restarts no node")
	assert.Equal(t, NoFaults(), cfg.Bounds)

	a, b := runOK(t, cfg), runOK(t, cfg)
	require.Equal(t, a.TraceHash, b.TraceHash, "same seed, same trace: %s", divergence(a.Trace.Text(), b.Trace.Text()))
	assert.Equal(t, 0, a.Stats.FaultsInjected)
	assert.True(t, a.History.FaultFree)
	for _, f := range a.History.Faults {
		assert.Equal(t, model.FaultStreamRefused, f.Kind, "only the relay's own refusals")
	}
	head := strings.Join(strings.SplitN(a.Trace.Text(), "\n", 12), "\n")
	assert.Contains(t, head, " churn-only\n")
	assert.Contains(t, head, "faults none\n")

	// The same workload as the seed's default run: the same actions, with
	// joins and leaves once traffic runs (a calm run has none).
	def.Upgrade = nil
	d := Run(t, def)
	require.NoError(t, d.Err)
	assert.Equal(t, workloadLine(d.Trace.Text()), strings.TrimSuffix(workloadLine(a.Trace.Text()), " churn-only"))
	assert.NotEqual(t, "faults none", faultsLine(d.Trace.Text()), "the seed draws faults in its default run")
	assert.False(t, d.History.FaultFree)
	churn := 0
	for _, ev := range a.History.Events {
		if (ev.Kind == model.KindJoin || ev.Kind == model.KindLeave) && ev.Invoked > 4*cfg.Tick {
			churn++
		}
	}
	assert.Positive(t, churn, "membership changes under traffic")

	bad := cfg
	bad.Calm = true
	assert.ErrorContains(t, bad.Validate(), "churn-only and calm")
	bad = cfg
	bad.Bounds = DefaultBounds()
	assert.ErrorContains(t, bad.Validate(), "injects no fault")
	bad = cfg
	bad.Upgrade = &Upgrade{From: 1, To: 3}
	assert.ErrorContains(t, bad.Validate(), "takes no upgrade")
}

func workloadLine(trace string) string { return headerLine(trace, "workload ") }
func faultsLine(trace string) string   { return headerLine(trace, "faults ") }

func headerLine(trace, prefix string) string {
	for _, l := range strings.Split(trace, "\n") {
		if i := strings.Index(l, prefix); i >= 0 && i < 20 {
			return l[i:]
		}
	}
	return ""
}

package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A run made explicit (its workload, fault plan and fault mix given as
// data, as the shrinker and a story give them) is the same run: the same
// trace hash and the same verdict.
func TestExplicitPlanIsTheSameRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Duration = cfg.Duration / 2
	first := Run(t, cfg)
	require.NoError(t, first.Err)
	require.NotEmpty(t, first.Faults, "seed 0x2a's plan should hold faults")
	ex := cfg
	ex.Actions, ex.Faults = first.Actions, first.Faults
	mix := first.Mix
	ex.Mix = &mix
	again := Run(t, ex)
	require.NoError(t, again.Err)
	require.NotEmpty(t, first.TraceHash)
	require.Equal(t, first.TraceHash, again.TraceHash)
	require.Equal(t, len(first.Violations), len(again.Violations))
}

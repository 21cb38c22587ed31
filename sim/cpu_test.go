package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Under the contended model the live bound a run is judged by grows by
// the longest wait for a core the run met; without it, it does not.
func TestContendedLiveBound(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 0x2a
	cpu := Calibrated()
	cfg.CPU = &cpu
	res := Run(t, cfg)
	require.False(t, res.Failed(), "%v", res.Violations)
	require.Positive(t, res.MaxWait)
	require.Equal(t, LiveBound(res.Cost, 20*time.Millisecond)+ContendedLiveBound(res.MaxWait), res.History.LiveBound)
	require.Equal(t, 2*ContendedLiveBound(time.Millisecond), ContendedLiveBound(2*time.Millisecond))

	cfg.CPU = nil
	res = Run(t, cfg)
	require.Zero(t, res.MaxWait)
	require.Equal(t, LiveBound(res.Cost, 20*time.Millisecond), res.History.LiveBound)
}

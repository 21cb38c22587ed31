package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

// Ops booked on a busy resource wait for its earliest free core, and the
// longest wait is what the contended live bound grows by.
func TestResourcesBookWaitsForAFreeCore(t *testing.T) {
	m := Calibrated()
	m.Cores = 2
	r := NewResources(m)
	s := NewScheduler(&Random{C: Seed(1).Rand()}, NewTrace(false, 0), func(string, string, string) time.Duration { return 0 })
	op := func(id string) *Op { return &Op{Node: "n1", Kind: system.PointTask, ID: id} }
	a, b, c := op("a"), op("b"), op("c")
	require.True(t, r.book(s, a, 0))
	require.True(t, r.book(s, b, 0))
	require.Zero(t, r.MaxWait(), "two cores: two ops start at once")
	require.True(t, r.book(s, c, 10*time.Microsecond))
	require.Equal(t, m.Task, a.ReadyAt)
	require.Equal(t, 2*m.Task, c.ReadyAt, "the third op starts when a core frees up")
	require.Equal(t, m.Task-10*time.Microsecond, r.MaxWait())
	require.False(t, r.book(s, c, m.Task), "an op is booked once")
	require.Equal(t, 2*ContendedLiveBound(time.Millisecond), ContendedLiveBound(2*time.Millisecond))
}

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

	cfg.CPU = nil
	res = Run(t, cfg)
	require.Zero(t, res.MaxWait)
	require.Equal(t, LiveBound(res.Cost, 20*time.Millisecond), res.History.LiveBound)
}

package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/internal/proc"
	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// denseConfig is a workload where many operations share a virtual instant
// (a coarse tick, a high rate): there the order of parked ops decides the
// outcome, so only a working scheduler replays identically. A sparse
// workload would replay identically even with the gates off.
func denseConfig(seed Seed, mode system.Mode) Config {
	c := DefaultConfig()
	c.Seed, c.Mode = seed, mode
	c.Users, c.Rooms, c.RoomsPerUser = 10, 2, 2
	c.Duration, c.Drain = 2*time.Second, 20*time.Second
	c.Rate, c.Tick = 60, 200*time.Millisecond
	return c
}

func runOK(t *testing.T, cfg Config) *Result {
	t.Helper()
	res := Run(t, cfg)
	require.NoError(t, res.Err)
	require.NoError(t, res.BubbleErr)
	require.Empty(t, res.Violations, "seed %s mode %s: %s", cfg.Seed, cfg.Mode, model.Summarize(res.Violations))
	return res
}

// deliveries renders what every user received, in order, with times.
func deliveries(h *model.History) string {
	var b strings.Builder
	h.EachDelivery(func(e model.Event) {
		fmt.Fprintf(&b, "%v %s %s#%d\n", e.Time, e.User, e.Room, e.Seq)
	})
	return b.String()
}

func TestDeterminismSameSeedSameTrace(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 4
	}
	for _, mode := range []system.Mode{system.ModeSingle, system.ModeBulk, system.ModeStream} {
		t.Run(string(mode), func(t *testing.T) {
			hashes := map[string]Seed{}
			outcomes := map[string]bool{}
			for s := 1; s <= seeds; s++ {
				seed := Seed(0xd00d0000 + s)
				cfg := denseConfig(seed, mode)
				cfg.KeepTrace = true
				a := runOK(t, cfg)
				b := runOK(t, cfg)
				if a.TraceHash != b.TraceHash {
					dir := os.TempDir()
					_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("relaysim-%s-%s-1.txt", seed, mode)), []byte(a.Trace.Text()), 0o644)
					_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("relaysim-%s-%s-2.txt", seed, mode)), []byte(b.Trace.Text()), 0o644)
					_ = proc.AddViolation("determinism", fmt.Sprintf("seed %s mode %s replayed differently: %s",
						seed, mode, divergence(a.Trace.Text(), b.Trace.Text())))
					t.Fatalf("seed %s mode %s replayed differently (traces in %s/relaysim-%s-%s-{1,2}.txt): %s",
						seed, mode, dir, seed, mode, divergence(a.Trace.Text(), b.Trace.Text()))
				}
				require.Equal(t, deliveries(a.History), deliveries(b.History))
				if prev, dup := hashes[a.TraceHash]; dup {
					t.Fatalf("seeds %s and %s gave the same trace hash", prev, seed)
				}
				hashes[a.TraceHash] = seed
				outcomes[deliveries(a.History)] = true
			}
			assert.Len(t, outcomes, seeds, "different seeds should give different delivery outcomes")
		})
	}
}

// The scheduler, not only the workload, must change outcomes: the same
// actions under different scheduler seeds deliver in different orders.
func TestDeterminismSchedulerExplores(t *testing.T) {
	base := denseConfig(0xabc, system.ModeBulk)
	base.Bounds = NoFaults()
	wc := base.WorkloadConfig
	wc.Nodes = base.Nodes
	actions := Generate(base.Seed.Derive("workload"), wc).Actions
	outcomes := map[string]bool{}
	for s := range 5 {
		cfg := base
		cfg.Actions = actions
		cfg.Seed = Seed(0xabc + s) // new scheduler, cost and fault sub-seeds; same actions
		outcomes[deliveries(runOK(t, cfg).History)] = true
	}
	assert.Greater(t, len(outcomes), 1, "five scheduler seeds gave one delivery outcome")
}

// Negative controls: the determinism check must be able to fail. Ordering
// parked ops by arrival instead of by key, or switching the gates off,
// makes replays of a dense workload diverge.
func TestDeterminismNegativeControls(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"by-arrival", func(c *Config) { c.ByArrival = true }},
		{"ungated", func(c *Config) { c.Ungated = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "ungated" && raceEnabled {
				t.Skip("gates off, nothing serializes the harness: the ungated control races by construction (it runs without -race)")
			}
			diverged := false
			for s := 1; s <= 10 && !diverged; s++ {
				cfg := denseConfig(Seed(0xbad0+s), system.ModeSingle)
				tc.set(&cfg)
				a, b := Run(t, cfg), Run(t, cfg)
				require.NoError(t, a.Err)
				diverged = a.TraceHash != b.TraceHash
			}
			assert.True(t, diverged, "%s: ten seeds replayed identically; the determinism check would have no teeth", tc.name)
		})
	}
}

// divergence shows where two traces part: the first differing line with
// the lines before it.
func divergence(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			from := max(0, i-8)
			return fmt.Sprintf("first difference at line %d:\n  common: %s\n  run 1:  %s\n  run 2:  %s",
				i+1, strings.Join(la[from:i], "\n          "), la[i], lb[i])
		}
	}
	return fmt.Sprintf("one trace is a prefix of the other (%d vs %d lines)", len(la), len(lb))
}

package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Swarm sub-seeds hold still: each fault kind draws from its own sub-seed,
// so turning one kind off (its bound at 0) takes that kind out of the mix
// and the plan and leaves every other kind exactly as it was.
func TestSwarmKindsHoldStill(t *testing.T) {
	users := []string{"u01", "u02", "u03", "u04", "u05", "u06"}
	const start, end = 200 * time.Millisecond, 10 * time.Second
	for _, tc := range []struct {
		kind  string
		off   func(*FaultBounds)
		clear func(*FaultMix)
		gone  []string // plan kinds that go with it
	}{
		{"crash", func(b *FaultBounds) { b.Crashes = 0 }, func(m *FaultMix) { m.Crashes = 0 }, []string{"crash", "restart"}},
		{"partition", func(b *FaultBounds) { b.Partitions = 0 }, func(m *FaultMix) { m.Partitions = 0 }, []string{"partition", "heal"}},
		{"pause", func(b *FaultBounds) { b.Pauses = 0 }, func(m *FaultMix) { m.Pauses = 0 }, []string{"pause"}},
		{"redis-outage", func(b *FaultBounds) { b.RedisOutages = 0 }, func(m *FaultMix) { m.RedisOutages = 0 }, []string{"redis-outage"}},
		{"redis-spike", func(b *FaultBounds) { b.RedisSpikes = 0 }, func(m *FaultMix) { m.RedisSpikes = 0 }, []string{"redis-spike"}},
		{"route-flush", func(b *FaultBounds) { b.RouteFlushes = 0 }, func(m *FaultMix) { m.RouteFlushes = 0 }, []string{"route-flush"}},
		{"vanish", func(b *FaultBounds) { b.Vanishes = 0 }, func(m *FaultMix) { m.Vanishes = 0 }, []string{"vanish"}},
		{"slow", func(b *FaultBounds) { b.SlowConsumers = 0 }, func(m *FaultMix) { m.SlowConsumers = 0 }, []string{"slow"}},
		{"blip", func(b *FaultBounds) { b.Blips = 0 }, func(m *FaultMix) { m.Blips = 0 }, []string{"blip"}},
		{"forge", func(b *FaultBounds) { b.Forgeries = 0 }, func(m *FaultMix) { m.Forgeries = 0 }, nil}, // planned apart: PlanForgeries
		{"steal", func(b *FaultBounds) { b.Steals = 0 }, func(m *FaultMix) { m.Steals = 0 }, nil},       // planned apart: PlanSteals
		{"network", func(b *FaultBounds) { b.Network = 0 }, func(m *FaultMix) {
			m.DropRequest, m.DropResponse, m.Duplicate, m.Delay = 0, 0, 0, 0
		}, nil},
		{"redis-errors", func(b *FaultBounds) { b.RedisErrors = 0 }, func(m *FaultMix) { m.RedisError = 0 }, nil},
		{"recv-break", func(b *FaultBounds) { b.RecvBreaks = 0 }, func(m *FaultMix) { m.RecvBreak = 0 }, nil},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			on := 0
			for s := range 500 {
				seed := Seed(0x5eed0000 + s)
				b := DefaultBounds()
				full := DrawMix(seed.Derive("faults"), b)
				tc.off(&b)
				got := DrawMix(seed.Derive("faults"), b)
				want := full
				tc.clear(&want)
				require.Equal(t, want, got, "seed %s: the mix with %s off", seed, tc.kind)
				if want != full {
					on++
				}

				plan := seed.Derive("faults").Derive("plan")
				var wantPlan []Fault
				for _, f := range PlanFaults(plan, full, 3, users, start, end) {
					if !contains(tc.gone, string(f.Kind)) {
						wantPlan = append(wantPlan, f)
					}
				}
				require.Equal(t, wantPlan, PlanFaults(plan, got, 3, users, start, end), "seed %s: the plan with %s off", seed, tc.kind)
			}
			require.Greater(t, on, 100, "too few seeds drew %s at all for the check to mean anything", tc.kind)
		})
	}
}

// Raising one kind's bound changes only that kind's draw too.
func TestSwarmBoundOfOneKindMovesOnlyIt(t *testing.T) {
	for s := range 200 {
		seed := Seed(0xb0b0000 + s)
		b := DefaultBounds()
		base := DrawMix(seed, b)
		b.Crashes, b.Vanishes = 4, 9
		more := DrawMix(seed, b)
		more.Crashes, more.Vanishes = base.Crashes, base.Vanishes
		require.Equal(t, base, more, "seed %s", seed)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The swarm draws each seed's channels per peer (1-4) from a sub-seed of
// its own, prints it in the trace header, and the nodes then keep that
// many connections per peer.
func TestSwarmDrawsChannelsPerPeer(t *testing.T) {
	seen := map[int]bool{}
	for s := range 100 {
		n := DrawChannels(Seed(s).Derive("channels"))
		require.True(t, n >= 1 && n <= 4, "seed %d drew %d channels", s, n)
		seen[n] = true
	}
	require.Len(t, seen, 4, "100 seeds did not draw every channel count")

	cfg := denseConfig(0xc4a, system.ModeBulk)
	cfg.Bounds = NoFaults()
	cfg.KeepTrace = true
	for seed := Seed(1); ; seed++ {
		if DrawChannels(seed.Derive("channels")) == 3 {
			cfg.Seed = seed
			break
		}
	}
	res := runOK(t, cfg)
	require.Equal(t, 3, res.Channels)
	assert.Contains(t, res.Trace.Text(), " channels=3\n")
	most := 0
	for _, s := range res.History.Samples {
		most = max(most, s.OutConns)
		assert.LessOrEqual(t, s.OutConns, 3*s.LivePeers, "sample %+v", s)
	}
	assert.Greater(t, most, 2, "no node opened more than one connection to a peer")
}

// A wide run's kinds (wideBounds: flood, supersede) move no other draw:
// the wide mix and plan, without them, are the plain ones.
func TestWideBoundsMoveOnlyTheirKinds(t *testing.T) {
	users := []string{"u01", "u02", "u03", "u04"}
	floods, supersedes := 0, 0
	for s := range 200 {
		seed := Seed(0x31de0000 + s)
		b := DefaultBounds()
		base := DrawMix(seed.Derive("faults"), b)
		wideBounds(&b)
		wide := DrawMix(seed.Derive("faults"), b)
		floods += wide.Floods
		supersedes += wide.Supersedes
		plain := wide
		plain.Floods, plain.Supersedes = 0, 0
		require.Equal(t, base, plain, "seed %s", seed)
		plan := seed.Derive("faults").Derive("plan")
		var kept []Fault
		for _, f := range PlanFaults(plan, wide, 3, users, 200*time.Millisecond, 10*time.Second) {
			if f.Kind != model.FaultFlood && f.Kind != model.FaultSupersede {
				kept = append(kept, f)
			}
		}
		require.Equal(t, PlanFaults(plan, base, 3, users, 200*time.Millisecond, 10*time.Second), kept, "seed %s", seed)
	}
	assert.Greater(t, floods, 50)
	assert.Greater(t, supersedes, 50)
}

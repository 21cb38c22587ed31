package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

// A rolling restart whose every step overlaps incarnations, without other
// faults: each successor keeps its registry entry (the fixed deregister),
// so peers relay to it live once the overlap's short recovery is over.
// Under the deregister-read-then-delete mutant this run fails
// timely-live-delivery.
func TestOverlappingRollingRestart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed, cfg.Duration, cfg.Drain = 1, 5*time.Second, 15*time.Second
	cfg.Bounds, cfg.Overlap, cfg.Upgrade = NoFaults(), 1, &Upgrade{From: 3, To: 3}
	res := Run(t, cfg)
	require.NoError(t, res.Err)
	require.NoError(t, res.BubbleErr)
	assert.Empty(t, res.Violations)
	assert.Equal(t, 3, res.Coverage.OverlappingIncarnations)
	n := 0
	for _, f := range res.History.Faults {
		if f.Kind == model.FaultOverlap {
			n++
			assert.GreaterOrEqual(t, f.To, f.From, "an overlap ends when the old incarnation has stopped")
		}
	}
	assert.Equal(t, 3, n)
}

func TestDrawLimits(t *testing.T) {
	assert.Nil(t, DrawLimits(7, 3, 0), "share 0: never mixed")
	for s := Seed(1); s <= 20; s++ {
		ls := DrawLimits(s, 3, 1)
		require.Len(t, ls, 3)
		assert.Equal(t, ls, DrawLimits(s, 3, 1), "deterministic")
		small, dflt := 0, 0
		for _, l := range ls {
			if l.MaxPayload == 0 {
				dflt++
				assert.Zero(t, l.MaxRecipients)
				continue
			}
			small++
			assert.True(t, l.MaxPayload >= 64 && l.MaxPayload <= 256, "payload limit %d", l.MaxPayload)
			assert.True(t, l.MaxRecipients >= 2 && l.MaxRecipients <= 4, "recipient limit %d", l.MaxRecipients)
		}
		assert.Positive(t, small, "seed %v: a node differs", s)
		assert.Positive(t, dflt, "seed %v: a node keeps the defaults", s)
	}
}

func TestMarkOverlaps(t *testing.T) {
	plan := func() []Fault {
		return []Fault{{Kind: model.FaultCrash}, {Kind: model.FaultPause}, {Kind: model.FaultUpgrade}, {Kind: model.FaultCrash}}
	}
	none, all := plan(), plan()
	MarkOverlaps(3, none, 0)
	MarkOverlaps(3, all, 1)
	for i := range all {
		assert.False(t, none[i].Overlap)
		assert.Equal(t, all[i].Kind != model.FaultPause, all[i].Overlap, "fault %d", i)
		assert.LessOrEqual(t, all[i].Lag, maxStopLag)
	}
}

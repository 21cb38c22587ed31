package plan

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

// samples are faults of every registered kind: each drawable kind's draws
// (Place) and their follow-ups over a few generators and cluster sizes,
// and hand-made ones of the kinds placed elsewhere, with and without
// their optional fields.
func samples(t *testing.T) []Fault {
	t.Helper()
	var out []Fault
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, seed+1))
		for _, nodes := range []int{1, 2, 3, 5} {
			w := World{Nodes: nodes, Users: []string{"u1", "u2", "weird user"}}
			for _, k := range Registry {
				f, ok := k.Place(r, time.Duration(r.IntN(60000))*time.Millisecond, w)
				if !ok {
					continue
				}
				out = append(out, f)
				if g, ok := k.Follow(f); ok {
					out = append(out, g)
				}
			}
		}
	}
	return append(out,
		Fault{At: time.Second, Kind: model.FaultCrash, Node: 1, For: 2 * time.Second, Overlap: true, Lag: 5 * time.Millisecond},
		Fault{At: time.Second, Kind: model.FaultRestart, Node: 2},
		Fault{At: time.Second, Kind: model.FaultUpgrade, Node: 0, Protocol: 3},
		Fault{At: time.Second, Kind: model.FaultUpgrade, Node: 1, Protocol: 2, Overlap: true, Lag: time.Millisecond},
		Fault{At: time.Second, Kind: model.FaultHeal, Node: 0, Peer: -1},
		Fault{At: time.Second, Kind: model.FaultForge, User: "u1",
			Forge: Forgery{Call: "relay", Room: "r1", As: "u2", Token: "garbage", MsgID: "m3", Node: 2}},
		Fault{At: time.Second, Kind: model.FaultForge, User: "u1", Forge: Forgery{Call: "connect", As: "u2", Token: "missing"}},
		Fault{At: time.Second, Kind: model.FaultSteal, User: "u3",
			Steal: Steal{Room: "r1", Victim: "u2", MsgID: "u2-7", Member: true, Node: 1}},
		Fault{At: time.Second, Kind: model.FaultSteal, User: "u3", Steal: Steal{Room: "r 2", Victim: "u2", MsgID: "m"}},
	)
}

// TestEveryFaultKindRoundTrips: a fault of every registered kind, written
// by FormatFault, reads back by ParseFault to the same fault.
func TestEveryFaultKindRoundTrips(t *testing.T) {
	seen := map[FaultKind]int{}
	for _, f := range samples(t) {
		line := FormatFault(f)
		got, err := ParseFault(line)
		require.NoError(t, err, "%q", line)
		require.Equal(t, f, got, "%q", line)
		seen[f.Kind]++
	}
	for _, k := range Registry {
		assert.Positive(t, seen[k.Name()], "no %s fault round-tripped", k.Name())
	}
}

// TestEveryActionKindRoundTrips: an action of every kind, with its
// positional fields and then every other field set, reads back to the
// same action.
func TestEveryActionKindRoundTrips(t *testing.T) {
	for _, k := range ActionKinds() {
		a := Action{At: 1250 * time.Millisecond, User: "u3", Kind: k, Room: "r1", MsgID: "m17", Node: 1, For: 2 * time.Second}
		if k.Bad() {
			a.Room, a.MsgID, a.As = "", "bad id", "no one"
		}
		for _, v := range []Action{a, func() Action { b := a; b.Size, b.As, b.Token = 40, "u2", "wrong-secret"; return b }()} {
			line := FormatAction(v)
			got, err := ParseAction(line)
			require.NoError(t, err, "%s: %q", k, line)
			require.Equal(t, v, got, "%s: %q", k, line)
		}
	}
}

// TestEveryKindIsRegisteredOnce: names, heads and mix knobs are unique
// (a head or a knob named twice would parse as only one of its kinds).
func TestEveryKindIsRegisteredOnce(t *testing.T) {
	names, heads, knobs := map[FaultKind]bool{}, map[string]bool{}, map[string]bool{}
	ranks := map[int]bool{}
	for _, f := range opKnobs {
		ranks[f.rank] = true
	}
	for _, k := range Registry {
		_, err := model.ParseFaultKind(string(k.Name()))
		assert.NoError(t, err, "a registered kind is one of model's")
		assert.False(t, names[k.Name()], "kind %s registered twice", k.Name())
		names[k.Name()] = true
		for _, h := range k.Heads() {
			assert.False(t, heads[h], "head %q of two kinds", h)
			heads[h] = true
		}
		if b := BudgetOf(k); b.Knob != "" {
			assert.False(t, knobs[b.Knob], "knob %q of two kinds", b.Knob)
			assert.False(t, ranks[b.MixRank], "%s: MixRank %d of two knobs", k.Name(), b.MixRank)
			assert.True(t, b.MixRank > 0 && b.MixRank <= MaxMixRank, "%s: MixRank %d outside 1..%d", k.Name(), b.MixRank, MaxMixRank)
			ranks[b.MixRank] = true
			if b.Sweep != nil {
				assert.True(t, b.Sweep.OneIn > 0 && b.Sweep.Bound > 0 && b.Sweep.Name != "", "%s: a sweep world without a share, a bound or a name", k.Name())
			}
			knobs[b.Knob] = true
			assert.NotNil(t, b.Bound, "%s: a knob without a bound", k.Name())
			assert.NotNil(t, b.Mix, "%s: a knob without a mix field", k.Name())
			assert.NotEmpty(t, b.Flag, "%s: a knob without a flag", k.Name())
		}
	}
	assert.Len(t, MixKnobs(), len(opKnobs)+len(knobs))
}

// TestMixRoundTrips: a mix with every knob set reads back to itself.
func TestMixRoundTrips(t *testing.T) {
	var m FaultMix
	for i, f := range mixFields() {
		if f.p != nil {
			*f.p(&m) = 0.125
		} else {
			*f.n(&m) = i + 1
		}
	}
	got, err := ParseMix(FormatMix(m))
	require.NoError(t, err)
	assert.Equal(t, m, got)
}

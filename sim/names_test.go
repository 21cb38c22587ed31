package sim

import (
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

// validNameMirror is system's name rule as the docs state it
// (docs/protocol-rules.md): the harness's generators are checked against
// it, the relay's own rule by system's tests.
func validNameMirror(s string) bool {
	if s == "" || len(s) > system.MaxNameLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == ':' || unicode.IsControl(r) || unicode.IsSpace(r) ||
			unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) {
			return false
		}
	}
	return true
}

func TestWideNames(t *testing.T) {
	longest := 0
	for seed := range Seed(50) {
		names, tags := WideNames(seed.Rand(), 12)
		again, _ := WideNames(seed.Rand(), 12)
		require.Equal(t, names, again, "deterministic")
		seen := map[string]bool{}
		for i, n := range names {
			assert.True(t, validNameMirror(n), "%q", n)
			assert.True(t, NonASCII(n), "%q", n)
			assert.False(t, seen[n], "%q twice", n)
			seen[n] = true
			assert.LessOrEqual(t, len(tags[i])+len("-m99999"), system.MaxNameLen, "a message id from %q fits", tags[i])
			if len(n) == system.MaxNameLen {
				longest++
			}
		}
	}
	assert.Greater(t, longest, 50, "about one name in four is of the longest allowed length")
}

func TestBadNamesAreMalformed(t *testing.T) {
	for _, n := range BadNames {
		assert.False(t, validNameMirror(n), "%q", n)
	}
	for i, f := range FormatChars {
		assert.True(t, unicode.Is(unicode.Cf, f), "%U", f)
		for _, base := range []string{"u01", "alice", longestWide} {
			n := FormatName(base, f, i)
			assert.True(t, utf8.ValidString(n) && len(n) <= system.MaxNameLen, "%q", n)
			assert.False(t, validNameMirror(n), "%q", n)
		}
	}
}

var longestWide = padName("部屋", []rune("部屋"))

// TestAlphabetWide: a wide run's workload adds exactly one malformed-name
// call, whose name holds a format character, and moves no other draw; its
// node ids are valid and its bad node ids are not.
func TestAlphabetWide(t *testing.T) {
	w := WorkloadConfig{Users: 12, Rooms: 3, Nodes: 3, Duration: 3 * time.Second, Rate: 20, Churn: 1, Tick: 50 * time.Millisecond, RoomsPerUser: 2}
	for seed := range Seed(20) {
		plain := Generate(seed, w)
		w.Alphabet = AlphabetWide
		wide := Generate(seed, w)
		w.Alphabet = AlphabetPlain
		require.Len(t, wide.Actions, len(plain.Actions)+1)
		var extra []Action
		j := 0
		for _, a := range wide.Actions {
			if j < len(plain.Actions) && a.String() == plain.Actions[j].String() {
				j++
				continue
			}
			extra = append(extra, a)
		}
		require.Len(t, extra, 1, "seed %d", seed)
		a := extra[0]
		assert.True(t, a.Kind.Bad(), "%s", a)
		hasFormat := false
		for _, s := range []string{a.Room, a.As, a.MsgID} {
			for _, r := range s {
				hasFormat = hasFormat || unicode.Is(unicode.Cf, r)
			}
		}
		assert.True(t, hasFormat, "%s", a)
	}
	seen := map[string]bool{}
	for _, id := range WideNodeIDs(Seed(1).Rand(), 9) {
		assert.False(t, seen[id], "%q twice", id)
		seen[id] = true
		assert.NoError(t, system.ValidNodeID(id), "%q", id)
	}
	for _, id := range BadNodeIDs {
		assert.Error(t, system.ValidNodeID(id), "%q", id)
	}
}

// TestNamesDrawn: about half the seeds draw wide names, and the names'
// draw moves no other: the same seed's workload in either style has the
// same actions at the same times, names aside.
func TestNamesDrawn(t *testing.T) {
	w := WorkloadConfig{Users: 12, Rooms: 3, Nodes: 3, Duration: 3 * time.Second, Rate: 20, Churn: 1, Tick: 50 * time.Millisecond, RoomsPerUser: 2}
	wide := 0
	for seed := range Seed(40) {
		wl := Generate(seed, w)
		if NonASCII(wl.Users[0]) {
			wide++
		}
		w.Names = NamesASCII
		ascii := Generate(seed, w)
		w.Names = NamesWide
		wideWl := Generate(seed, w)
		w.Names = NamesDrawn
		assert.Equal(t, "u01", ascii.Users[0])
		require.Equal(t, len(ascii.Actions), len(wideWl.Actions), "seed %d", seed)
		for i := range ascii.Actions {
			a, b := ascii.Actions[i], wideWl.Actions[i]
			assert.Equal(t, a.At, b.At)
			assert.Equal(t, a.Kind, b.Kind)
			assert.Equal(t, a.Node, b.Node)
		}
		for _, a := range wideWl.Actions {
			if !a.Kind.Bad() {
				assert.True(t, validNameMirror(a.User) && (a.Room == "" || validNameMirror(a.Room)) && (a.MsgID == "" || validNameMirror(a.MsgID)), "%s", a)
			}
		}
	}
	assert.InDelta(t, 20, wide, 10, "seeds with wide names of 40")
}

// TestWideNamesRunCoverage: a run with wide names relays them live in
// every mode, passes every property, and its coverage counts them and its
// malformed-name calls.
func TestWideNamesRunCoverage(t *testing.T) {
	for _, mode := range system.Modes {
		cfg := denseConfig(Seed(3), mode)
		cfg.Names = NamesWide
		res := runOK(t, cfg)
		cv := res.Coverage
		assert.Greater(t, cv.NonASCIINames, cfg.Rooms, "%s: %+v", mode, cv)
		assert.Positive(t, cv.NonASCIILive, "%s: %+v", mode, cv)
		assert.LessOrEqual(t, cv.NonASCIILive, cv.NonASCIIDeliveries)
		assert.Equal(t, res.Live+res.FromLog, cv.NonASCIIDeliveries, "%s: every room is named wide", mode)

		cfg.Names = NamesASCII
		res = runOK(t, cfg)
		assert.Zero(t, res.Coverage.NonASCIINames, "%s", mode)
		assert.Zero(t, res.Coverage.NonASCIIDeliveries, "%s", mode)
	}
}

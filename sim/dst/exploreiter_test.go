package dst

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bug that needs exactly two preemptions: t1 reads x between t0's two
// writes and again after the second (w1 r1 w2 r2: the switch to t1 after
// w1 preempts t0's w2, the switch back preempts t1's r2). Its outcome is
// t1 logging both writes' values, 1 then 9.
var twoPreemptions = toyProgram{{wr("x"), wr("x")}, {rd("x"), rd("x")}}

func twoPreemptionsBug(out string) bool { return strings.Contains(out, "t1[1,9]") }

// toySearch is one bound's search of p for IterateBounds: failing
// schedules are those whose outcome bad says is one.
func toySearch(t *testing.T, p toyProgram, bad func(string) bool) func(bound, limit int) BoundRun {
	return func(bound, limit int) BoundRun {
		e := NewExplorer(true, bound, nil)
		var r BoundRun
		for {
			if bad(runToy(t, p, e, false)) {
				r.Violations++
			}
			require.NoError(t, e.Divergence)
			more := e.Next()
			r.Schedules = e.Schedules
			r.Refused = e.BoundHit + e.BoundHeld
			if !more {
				r.Exhausted = true
				return r
			}
			if limit > 0 && r.Schedules >= limit {
				r.StoppedBy = "limit"
				return r
			}
		}
	}
}

// Iterative bounding reports the smallest bound at which a violation
// appears: 2 for a bug that needs two preemptions, with bounds 0 and 1
// exhausted and clean (and the naive search agrees that bound 1 cannot
// reach it).
func TestIterateBoundsReportsTheSmallestBound(t *testing.T) {
	naive1, _ := searchToy(t, twoPreemptions, false, 1, nil)
	naive2, _ := searchToy(t, twoPreemptions, false, 2, nil)
	has := func(m map[string]bool) bool {
		for out := range m {
			if twoPreemptionsBug(out) {
				return true
			}
		}
		return false
	}
	require.False(t, has(naive1), "bound 1 reaches the bug: not a two-preemption bug")
	require.True(t, has(naive2), "bound 2 misses the bug")

	it := IterateBounds(-1, 0, toySearch(t, twoPreemptions, twoPreemptionsBug))
	assert.Equal(t, 2, it.Smallest)
	assert.Equal(t, "violation", it.End)
	require.Len(t, it.Runs, 3)
	for _, r := range it.Runs[:2] {
		assert.True(t, r.Exhausted, "bound %d", r.Bound)
		assert.Zero(t, r.Violations, "bound %d", r.Bound)
	}
	assert.Equal(t, "smallest bound with a violation: 2 (no violation at bounds 0..1, exhausted: 0=yes 1=yes)", it.Summary())

	// Up to a top bound below it: no violation, and said so.
	it = IterateBounds(1, 0, toySearch(t, twoPreemptions, twoPreemptionsBug))
	assert.Equal(t, -1, it.Smallest)
	assert.Equal(t, "no violation at bounds 0..1 (exhausted: 0=yes 1=yes)", it.Summary())
}

// With no top bound, the iteration ends at the first bound that refused
// nothing: every higher bound would run the same schedules. The same
// search unbounded finds the same outcomes.
func TestIterateBoundsStopsWhenTheBoundRefusesNothing(t *testing.T) {
	none := func(string) bool { return false }
	it := IterateBounds(-1, 0, toySearch(t, twoPreemptions, none))
	assert.Equal(t, "saturated", it.End)
	last := it.Runs[len(it.Runs)-1]
	assert.Zero(t, last.Refused)
	assert.Contains(t, it.Summary(), "refused nothing, so every higher bound runs the same schedules")
	for _, r := range it.Runs[:len(it.Runs)-1] {
		assert.Positive(t, r.Refused, "bound %d refused nothing but the iteration went on", r.Bound)
	}
	bounded, _ := searchToy(t, twoPreemptions, true, last.Bound, nil)
	unbounded, _ := searchToy(t, twoPreemptions, true, -1, nil)
	assert.Equal(t, keys(unbounded), keys(bounded))
}

// A schedule budget is the whole iteration's: each bound gets what the
// ones before it left, and the bound it runs out in says it was stopped.
func TestIterateBoundsBudget(t *testing.T) {
	full := IterateBounds(-1, 0, toySearch(t, twoPreemptions, twoPreemptionsBug))
	before := full.Runs[0].Schedules + full.Runs[1].Schedules
	it := IterateBounds(-1, before+1, toySearch(t, twoPreemptions, twoPreemptionsBug))
	assert.Equal(t, "stopped", it.End)
	assert.Equal(t, -1, it.Smallest)
	require.Len(t, it.Runs, 3)
	assert.Equal(t, 1, it.Runs[2].Schedules)
	assert.Equal(t, "limit", it.Runs[2].StoppedBy)
	assert.Contains(t, it.Summary(), "bound 2 was stopped (limit)")
	// Spent exactly by bounds 0 and 1: bound 2 runs nothing, and says so.
	it = IterateBounds(-1, before, toySearch(t, twoPreemptions, twoPreemptionsBug))
	require.Len(t, it.Runs, 3)
	assert.Zero(t, it.Runs[2].Schedules)
	assert.Equal(t, "stopped", it.End)
}

// sampleToy draws n schedules of p with a PCT sampler of seed and depth
// d, and returns each one's outcome and choices.
func sampleToy(t *testing.T, p toyProgram, seed Seed, d, n int, budget map[string]int) (outs []string, scheds [][]string) {
	e := NewExplorer(false, -1, budget)
	e.Sample = NewSampler(seed, d)
	for range n {
		outs = append(outs, runToy(t, p, e, len(budget) > 0))
		require.NoError(t, e.Divergence)
		scheds = append(scheds, e.Schedule())
		require.True(t, e.Next())
	}
	return outs, scheds
}

// The fallback: a search stopped by its schedule limit before reaching
// the bug, then PCT samples. It reports itself not exhausted, finds the
// bug, every failing schedule replays to the same outcome, and the same
// seed draws the same schedules (another seed, other ones).
func TestExploreFallbackSamples(t *testing.T) {
	search := toySearch(t, twoPreemptions, twoPreemptionsBug)(-1, 1)
	require.Equal(t, "limit", search.StoppedBy)
	require.Zero(t, search.Violations)

	outs, scheds := sampleToy(t, twoPreemptions, 0x2a, 2, 40, nil)
	f := Fallback{StoppedAt: search.Schedules, Sampled: len(outs), Depth: 2, Seed: 0x2a}
	for i, out := range outs {
		if !twoPreemptionsBug(out) {
			continue
		}
		f.Violations++
		r := NewExplorer(false, -1, nil)
		r.Replay = scheds[i]
		assert.Equal(t, out, runToy(t, twoPreemptions, r, false), "sampled schedule %d replayed", i+1)
		require.NoError(t, r.Divergence)
	}
	assert.Positive(t, f.Violations, "40 PCT schedules of depth 2 never reached the two-preemption bug")
	assert.Equal(t, "not exhausted: the search was stopped at 1 schedules; PCT sampled 40 more schedules (depth 2, seed 0x2a): violations "+
		strconv.Itoa(f.Violations), f.String())
	assert.NotContains(t, f.String(), "exhausted=yes")

	again, schedsAgain := sampleToy(t, twoPreemptions, 0x2a, 2, 40, nil)
	assert.Equal(t, outs, again, "same seed, same outcomes")
	assert.Equal(t, scheds, schedsAgain, "same seed, same schedules")
	_, other := sampleToy(t, twoPreemptions, 0x2b, 2, 40, nil)
	assert.NotEqual(t, scheds, other, "another seed draws other schedules")
}

// Faults and crashes are sampled within the budgets, and a sampled fault
// replays like a searched one.
func TestExploreFallbackSamplesFaults(t *testing.T) {
	p := toyProgram{{wr("x"), rd("y")}, {wr("y"), rd("x")}}
	budget := map[string]int{"crash": 1, "drop": 1}
	outs, scheds := sampleToy(t, p, 7, 1, 60, budget)
	var drops, crashes int
	for i, s := range scheds {
		d, c := 0, 0
		for _, ch := range s {
			if strings.HasSuffix(ch, "!drop") {
				d++
			}
			if strings.Contains(ch, "|crash|") {
				c++
			}
		}
		assert.LessOrEqual(t, d, 1, "schedule %d: %v", i+1, s)
		assert.LessOrEqual(t, c, 1, "schedule %d: %v", i+1, s)
		drops, crashes = drops+d, crashes+c
		r := NewExplorer(false, -1, budget)
		r.Replay = s
		assert.Equal(t, outs[i], runToy(t, p, r, true), "sampled schedule %d replayed", i+1)
		require.NoError(t, r.Divergence)
	}
	assert.Positive(t, drops, "no drop sampled in 60 schedules")
	assert.Positive(t, crashes, "no crash sampled in 60 schedules")
}

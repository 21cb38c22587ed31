package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

// The shrinker's tests need a run that fails for a reason the run's
// inputs decide, on code that has no bug: extraCheck stands in for one.
// "cross-after-crash" fails a run in which a node crashed and a user was
// delivered another user's message; "any-send" fails every run with an
// acked send, a decoy that a shrinker chasing any failure would settle
// for (it needs no crash).
const (
	propCrossAfterCrash = "cross-after-crash"
	propAnySend         = "any-send"
)

func injectedBug(h *model.History) []model.Violation {
	var vs []model.Violation
	crashed := false
	for _, f := range h.Faults {
		crashed = crashed || f.Kind == model.FaultCrash
	}
	cross := false
	h.EachDelivery(func(ev model.Event) {
		cross = cross || (ev.Sender != "" && ev.Sender != ev.User)
	})
	for _, ev := range h.Events {
		if ev.Kind == model.KindSend && ev.OK {
			vs = append(vs, model.Violation{Property: propAnySend, User: ev.User, Detail: "a send was acked"})
			break
		}
	}
	if crashed && cross {
		vs = append(vs, model.Violation{Property: propCrossAfterCrash, Detail: "a node crashed and a user got another's message"})
	}
	return vs
}

func shrinkConfig() Config {
	cfg := DefaultConfig()
	cfg.Duration = 5 * time.Second
	cfg.Drain = 10 * time.Second
	return cfg
}

func TestShrinkKeepsTheProperty(t *testing.T) {
	if testing.Short() {
		t.Skip("shrinks twice: about 100 runs")
	}
	cfg := shrinkConfig()
	first := Run(t, cfg)
	require.NoError(t, first.Err)
	injected := injectedBug(first.History)
	require.True(t, hasProperty(injected, propCrossAfterCrash), "seed %s should crash a node and cross users: %v", cfg.Seed, injected)
	require.True(t, hasProperty(injected, propAnySend), "the decoy fails too")

	var stages []string
	opt := ShrinkOptions{Property: propCrossAfterCrash, MaxRuns: 400, T: t, extraCheck: injectedBug,
		Progress: func(p ShrinkProgress) { stages = append(stages, p.Stage) }}
	res, err := Shrink(cfg, opt)
	require.NoError(t, err)
	require.False(t, res.OutOfBudget, "the shrink should finish within its runs")
	t.Logf("before %s\nafter  %s\nruns %d, %s\nactions %v\nfaults %v", res.Before, res.After, res.Runs, res.Elapsed, res.Config.Actions, res.Config.Faults)

	assert.Equal(t, propCrossAfterCrash, res.Property)
	assert.Equal(t, propCrossAfterCrash, res.Violation.Property)
	assert.True(t, res.Final.Trace.Kept(), "the final run keeps its trace")
	assert.Less(t, res.After.Actions, res.Before.Actions)
	assert.Less(t, res.After.Faults, res.Before.Faults)
	assert.Less(t, res.After.TraceLines, res.Before.TraceLines)
	assert.LessOrEqual(t, res.After.Actions, 8, "a send, a join or two, connects: %v", res.Config.Actions)
	crashes := 0
	for _, f := range res.Config.Faults {
		if f.Kind == model.FaultCrash {
			crashes++
		}
	}
	assert.Equal(t, 1, crashes, "the crash stays (the decoy alone would drop it): %v", res.Config.Faults)
	assert.Contains(t, stages, "faults")
	assert.Contains(t, stages, "schedule")

	// The shrunk run is a run: it fails on its own, with the same hash.
	again := Run(t, res.Config)
	require.NoError(t, again.Err)
	assert.True(t, hasProperty(injectedBug(again.History), propCrossAfterCrash))
	assert.Equal(t, res.Final.TraceHash, again.TraceHash)

	// The same configuration shrinks to the same result.
	opt.Progress = nil
	twice, err := Shrink(cfg, opt)
	require.NoError(t, err)
	assert.Equal(t, res.After, twice.After)
	assert.Equal(t, res.Runs, twice.Runs)
	assert.Equal(t, res.Config.Actions, twice.Config.Actions)
	assert.Equal(t, res.Config.Faults, twice.Config.Faults)
	assert.Equal(t, res.Final.TraceHash, twice.Final.TraceHash)
}

// A Runner (relaysim shrink -isolate's child processes) runs every run of
// the shrink in place of Run: the first, each candidate and the final one.
// It reports a run as far as the shrinker reads it, and its trace's length;
// the shrink is the same as in-process (here the runner runs in-process,
// the injected bug added to what it reports).
func TestShrinkThroughARunner(t *testing.T) {
	if testing.Short() {
		t.Skip("shrinks twice: about 100 runs")
	}
	cfg := shrinkConfig()
	opt := ShrinkOptions{Property: propCrossAfterCrash, MaxRuns: 400, T: t, extraCheck: injectedBug}
	inProcess, err := Shrink(cfg, opt)
	require.NoError(t, err)

	calls := 0
	opt.extraCheck = nil
	opt.Runner = func(c Config) (*Result, int) {
		calls++
		r := Run(t, c)
		// What a child reports: no trace, no history.
		out := &Result{Config: c, Violations: append(slices.Clip(r.Violations), injectedBug(r.History)...), Steps: r.Steps,
			Actions: r.Actions, Faults: r.Faults, Mix: r.Mix, Channels: r.Channels, StreamBacklog: r.StreamBacklog, Err: r.Err, BubbleErr: r.BubbleErr}
		return out, r.Trace.Lines() + 1000
	}
	res, err := Shrink(cfg, opt)
	require.NoError(t, err)
	assert.Equal(t, inProcess.Config.Actions, res.Config.Actions)
	assert.Equal(t, inProcess.Config.Faults, res.Config.Faults)
	assert.Equal(t, inProcess.Runs, res.Runs)
	assert.Equal(t, res.Runs+2, calls, "the first run, every candidate and the final run")
	assert.Equal(t, inProcess.After.TraceLines+1000, res.After.TraceLines, "the runner's count")
	assert.Equal(t, inProcess.Before.TraceLines+1000, res.Before.TraceLines)

	opt.Equiv = true
	_, err = Shrink(cfg, opt)
	assert.ErrorContains(t, err, "not with Equiv")
}

func TestShrinkRefusesAPassingRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Duration, cfg.Drain = time.Second, 5*time.Second
	cfg.Bounds = NoFaults()
	_, err := Shrink(cfg, ShrinkOptions{T: t})
	require.ErrorIs(t, err, ErrNoFailure)
}

func TestDdminFindsTheNeededItems(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		need []int
	}{
		{"one of many", 40, []int{17}},
		{"two far apart", 33, []int{0, 32}},
		{"three", 10, []int{2, 3, 9}},
		{"none needed", 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			tests := 0
			ddmin(tc.n, func(keep []int) bool {
				tests++
				for _, x := range tc.need {
					if !slices.Contains(keep, x) {
						return false
					}
				}
				got = keep
				return true
			}, func() bool { return false })
			if tc.need == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.need, got)
			assert.Less(t, tests, tc.n*len(tc.need)+10, "ddmin should not try every subset")
		})
	}
}

func TestFaultGroupsPairEnds(t *testing.T) {
	fs := []Fault{
		{At: 1 * time.Second, Kind: model.FaultCrash, Node: 1, For: 2 * time.Second},
		{At: 2 * time.Second, Kind: model.FaultPartition, Node: 0, Peer: 2, For: time.Second},
		{At: 3 * time.Second, Kind: model.FaultRestart, Node: 1},
		{At: 3 * time.Second, Kind: model.FaultHeal, Node: 0, Peer: 2},
		{At: 4 * time.Second, Kind: model.FaultRouteFlush},
	}
	assert.Equal(t, [][]int{{0, 2}, {1, 3}, {4}}, faultGroups(fs))
	two := onNodes(Config{Nodes: 3, Faults: fs, Actions: []Action{{User: "u1", Kind: ActConnect, Node: 2}}}, 2)
	assert.Equal(t, []Fault{fs[0], fs[2], fs[4]}, two.Faults, "the partition of n1 and n3 becomes one of n1 with itself: it goes, with its heal")
	assert.Equal(t, 0, two.Actions[0].Node, "a connect to n3 goes to n1")
}

package scenarios

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

var exploreLong = flag.Bool("explore.long", false, "also run the long naive searches (make explore)")

var commuteSeed = flag.Uint64("explore.commute-seed", 1, "the seed of the commutation check's draw of op pairs (a soak passes fresh ones)")
var commutePairs = flag.Int("explore.commute-pairs", 6, "op pairs the commutation check runs per story and mode")

// loadStory reads a story file: the commands before its first explore
// block, and the block.
func loadStory(t *testing.T, path string) ([]*datadriven.TestData, *datadriven.TestData) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return loadStoryText(t, string(data))
}

func loadStoryText(t *testing.T, data string) ([]*datadriven.TestData, *datadriven.TestData) {
	var setup []*datadriven.TestData
	var block *datadriven.TestData
	defer quietly()()
	datadriven.RunTestFromStringAny(t, data, func(t testing.TB, d *datadriven.TestData) string {
		cp := *d
		cp.CmdArgs = append([]datadriven.CmdArg(nil), d.CmdArgs...)
		switch {
		case block != nil:
		case d.Cmd == "explore":
			block = &cp
		case d.Cmd != "check" && d.Cmd != "trace" && d.Cmd != "metrics":
			setup = append(setup, &cp)
		}
		return d.Expected
	})
	require.NotNil(t, block, "no explore block")
	return setup, block
}

// The footprints the reduction trusts are tested on the relay itself: in
// every story and mode, pairs of parked ops they call independent are run
// in both orders and must continue alike and end alike.
func TestExploreCommutes(t *testing.T) {
	files, err := filepath.Glob("testdata/explore-*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		setup, block := loadStory(t, path)
		for _, mode := range system.Modes {
			t.Run(filepath.Base(path)+"/"+string(mode), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					n, err := CommuteCheck(setup, block, mode, DefaultExploreOptions(), *commutePairs, *commuteSeed)
					require.NoError(t, err)
					assert.Positive(t, n, "no independent pair to try")
				})
			})
		}
	}
}

// The commutation check finds a wrong footprint: with Redis keys left out
// of them, a send's and a join's scripts on two nodes look independent,
// and run in both orders they end differently.
func TestExploreCommuteCheckFindsAHole(t *testing.T) {
	// Both scripts are loaded in the setup, so each script's first command
	// is the one that acts (a NOSCRIPT miss would commute with anything).
	setup, block := loadStoryText(t, `cluster nodes=2
----

join user=u1 room=r1
----

connect user=u1 node=n1
----

connect user=u2 node=n2
----

send user=u1 room=r1 msg=first
----

explore
send user=u1 room=r1 msg=hi
join user=u2 room=r1
----
`)
	sim.BlindRedisFootprints = true
	defer func() { sim.BlindRedisFootprints = false }()
	defer func(n int) { CommuteBaseRuns = n }(CommuteBaseRuns)
	CommuteBaseRuns = 8
	synctest.Test(t, func(t *testing.T) {
		_, err := CommuteCheck(setup, block, system.ModeSingle, DefaultExploreOptions(), 1000, 1)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "do not commute")
	})
}

// The commutation check runs a lazy op (a crash) against a ready op the
// footprints call independent of it, and finds a wrong footprint there
// too: with the caller's liveness left out of what a relay handler's ops
// read (withCallers), a delivery for a call from n1 looks independent of
// n1's crash, though the crash cancels the call, and the delivery's
// handler then gives up (the hole the check found when it began to try
// lazy ops).
func TestExploreCommuteCheckFindsACrashedCaller(t *testing.T) {
	setup, block := loadStory(t, "testdata/explore-receiver-break.txt")
	sim.BlindCallerFootprints = true
	defer func() { sim.BlindCallerFootprints = false }()
	synctest.Test(t, func(t *testing.T) {
		_, err := CommuteCheck(setup, block, system.ModeSingle, DefaultExploreOptions(), 1000, 1)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "do not commute")
		assert.Contains(t, err.Error(), "|crash|")
	})
}

// Soundness is checked, not assumed: on every built-in story, at bounds
// 0, 1 and 2 (the bound's soundness is BPOR's, and was once broken:
// TestExploreBoundSiblings), the reduced search finds exactly the
// terminal states of the naive depth-first search at the same bound, and
// runs no more schedules. The naive search is long on most of them: go
// test runs the short ones, make explore (-explore.long) all.
func TestExploreReducedMatchesNaive(t *testing.T) {
	const naiveLimit = 20000
	all := func(system.Mode) bool { return true }
	// short: the story/bound pairs whose naive search go test affords,
	// and in which modes.
	short := map[string]func(system.Mode) bool{
		"send-races-join/0":      all,
		"send-races-join/1":      all,
		"broken-stream-resend/0": all,
		"user-moves/0":           all,
		"send-races-leave/0":     all,
		"catch-up-tick/0":        all,                                                      // timers=1: naive 88, 42, 112 schedules
		"two-senders/0":          func(m system.Mode) bool { return m == system.ModeBulk }, // 1,596 naive schedules in single
	}
	for _, story := range StoryNames() {
		for _, bound := range []int{0, 1, 2} {
			for _, mode := range system.Modes {
				name := fmt.Sprintf("%s/%d", story, bound)
				t.Run(name+"/"+string(mode), func(t *testing.T) {
					if ok := short[name]; (ok == nil || !ok(mode)) && !*exploreLong {
						t.Skip("a long naive search: make explore runs it (-explore.long)")
					}
					text, err := Story(story)
					require.NoError(t, err)
					// The story's own bound would win over the options': drop it.
					text = regexp.MustCompile(`(?m)^explore bound=\S+`).ReplaceAllString(text, "explore")
					synctest.Test(t, func(t *testing.T) {
						o := DefaultExploreOptions()
						o.Bound = bound
						reduced, err := ExploreText(t, story, text, mode, o)
						require.NoError(t, err)
						o.Reduce = false
						o.Limit = naiveLimit
						naive, err := ExploreText(t, story, text, mode, o)
						require.NoError(t, err)
						require.Len(t, reduced, 1)
						require.Len(t, naive, 1)
						if !naive[0].Exhausted && naive[0].Schedules >= naiveLimit {
							t.Skipf("the naive search passed %d schedules: too big to compare", naiveLimit)
						}
						assert.True(t, naive[0].Exhausted && reduced[0].Exhausted)
						assert.Equal(t, sortedStrings(naive[0].Terminal), sortedStrings(reduced[0].Terminal))
						assert.LessOrEqual(t, reduced[0].Schedules, naive[0].Schedules)
						t.Logf("naive %d schedules, reduced %d, %d terminal states", naive[0].Schedules, reduced[0].Schedules, len(reduced[0].Terminal))
					})
				})
			}
		}
	}
}

// A crash the explorer fires at the horizon ends before the liveness phase
// begins. It once raced it: the liveness phase found the node still up, a
// never-connected member's first connect met the crash, and exactly-once
// flagged a delivery the drain never had the chance to make (a false
// alarm, 3 of 608 schedules of two-senders bulk with crashes=1).
func TestExploreHorizonCrashEndsBeforeLiveness(t *testing.T) {
	b, err := os.ReadFile("testdata/explore-schedules/two-senders-bulk-horizon-crash.schedule")
	require.NoError(t, err)
	sched, err := dst.ParseSchedule(string(b))
	require.NoError(t, err)
	require.Equal(t, "n2|crash|n2", sched[len(sched)-1], "the schedule should end in the horizon's crash")
	text, err := Story("two-senders")
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		o := DefaultExploreOptions()
		o.Budget[sim.ExCrash] = 1
		o.Replay = sched
		rs, err := ExploreText(t, "two-senders", text, system.ModeBulk, o)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		assert.Equal(t, 1, rs[0].Schedules)
		for _, v := range rs[0].Violations {
			t.Errorf("a false alarm: %v", v.Violations)
		}
	})
}

// exhausted=yes is read with the horizon: a schedule the explored window
// closed on with work pending was run on, not explored, and the search
// says exhausted=no. At -horizon 0s: a client's send to a node a crash
// step took down is still retrying (a call in flight), and a relay
// request a delay holds is still parked. At 3 s neither is pending.
func TestExploreHorizonCutIsNotExhausted(t *testing.T) {
	joinText, err := Story("send-races-join")
	require.NoError(t, err)
	joinText = regexp.MustCompile(`(?m)^explore bound=\S+`).ReplaceAllString(joinText, "explore bound=0 delays=1")
	crashText := `cluster nodes=2
----

join user=u1 room=r1
----

run for=1s
----

explore bound=1
crash node=n1
send user=u1 room=r1 msg=hi node=n1
----
`
	for _, story := range []struct{ name, text string }{{"crash-then-send", crashText}, {"send-races-join-delayed", joinText}} {
		for _, tc := range []struct {
			horizon string
			cut     bool
		}{{"0s", true}, {"3s", false}} {
			t.Run(story.name+"/"+tc.horizon, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					o := DefaultExploreOptions()
					var err error
					o.Horizon, err = time.ParseDuration(tc.horizon)
					require.NoError(t, err)
					rs, err := ExploreText(t, story.name, story.text, system.ModeBulk, o)
					require.NoError(t, err)
					require.Len(t, rs, 1)
					r := rs[0]
					assert.Equal(t, tc.cut, r.HorizonCut > 0, "cut by the horizon: %d", r.HorizonCut)
					assert.Equal(t, !tc.cut, r.Exhausted)
					out := r.String()
					assert.Regexp(t, `(?m)^exhausted: (yes|no), violations: \d+$`, out)
					if tc.cut {
						assert.Contains(t, out, "cut by the horizon (0s) with work pending: ")
						assert.Contains(t, out, "exhausted: no,")
					}
				})
			})
		}
	}
}

// The relay's own timers count as work pending at the horizon: nothing is
// parked and no call is in flight while a relay retry or a stream backs
// off, or a stream lingers open before its ack, yet the story's work goes
// on when the timer fires. broken-stream-resend at -horizon 0s: the
// dropped write's resend (stream), the lost request's deadline and retry
// (single, bulk) and the linger of every stream come after the window;
// the search says exhausted=no and names the relay timers. It once said
// yes (max depth 26 in stream, 38 with the resend explored at 3 s).
func TestExploreHorizonCutsRelayTimers(t *testing.T) {
	text, err := Story("broken-stream-resend")
	require.NoError(t, err)
	for _, mode := range system.Modes {
		depth := map[time.Duration]int{}
		for _, horizon := range []time.Duration{0, 3 * time.Second} {
			t.Run(fmt.Sprintf("%s/%v", mode, horizon), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					o := DefaultExploreOptions()
					o.Horizon = horizon
					rs, err := ExploreText(t, "broken-stream-resend", text, mode, o)
					require.NoError(t, err)
					require.Len(t, rs, 1)
					r := rs[0]
					depth[horizon] = r.MaxDepth
					if horizon > 0 {
						assert.Zero(t, r.HorizonCut)
						assert.True(t, r.Exhausted)
						assert.NotContains(t, r.String(), "cut by the horizon")
						return
					}
					assert.Positive(t, r.HorizonCutBy[cutTimers], "cut by the horizon: %v", r.HorizonCutBy)
					assert.False(t, r.Exhausted)
					assert.Regexp(t, `cut by the horizon \(0s\) with work pending: \d+ \((.*, )?relay timers \d+\)\n`, r.String())
					assert.Contains(t, r.String(), "exhausted: no,")
				})
			})
		}
		assert.Less(t, depth[0], depth[3*time.Second], "%s: the window at 0 s stops short of the resend", mode)
	}
}

// Ops the Redis classifier could not show are said, with their reasons.
func TestExploreReportSaysUnknownFootprints(t *testing.T) {
	r := &ExploreReport{Opts: DefaultExploreOptions(), Terminal: map[string]bool{"x": true},
		Unknown: map[string]int{"unknown command object": 2, "keys spans the keyspace": 1}}
	assert.Contains(t, r.String(), "footprints unknown, taken to touch everything: 3 (keys spans the keyspace x1; unknown command object x2)\n")
	r.Unknown = map[string]int{}
	assert.NotContains(t, r.String(), "footprints unknown")
}

// A setting the command line fixed wins over the story's own argument,
// and the report says which it overrode; unfixed ones still come from
// the story.
func TestExploreFixedFlagWinsOverStory(t *testing.T) {
	def := DefaultExploreOptions()
	def.Bound, def.Fixed = 2, map[string]bool{"bound": true}
	d := &datadriven.TestData{Cmd: "explore", Input: "send user=u1 room=r1 msg=a",
		CmdArgs: []datadriven.CmdArg{{Key: "bound", Vals: []string{"0"}}, {Key: "drops", Vals: []string{"1"}}}}
	o, _, err := parseExplore(NewEnv(system.ModeBulk), d, def)
	require.NoError(t, err)
	assert.Equal(t, 2, o.Bound)
	assert.Equal(t, 1, o.Budget[sim.ExDrop])
	assert.Equal(t, []string{"bound=0 (fixed: 2)"}, o.Overridden)
	r := &ExploreReport{Opts: o, Overridden: o.Overridden, Terminal: map[string]bool{}}
	assert.Contains(t, r.String(), "bound=2 budgets: drop=1\nthe command line overrides the story's bound=0 (fixed: 2)\n")
	def.Fixed = nil
	o, _, err = parseExplore(NewEnv(system.ModeBulk), d, def)
	require.NoError(t, err)
	assert.Equal(t, 0, o.Bound, "not fixed: the story's own")
	assert.Empty(t, o.Overridden)
}

// A story file's schedule block carries its build line as a schedule file
// does: a schedule that diverges on another build no longer applies (no
// determinism bug); on this build it is one.
func TestExploreStoryScheduleCarriesItsBuild(t *testing.T) {
	text, err := Story("two-senders")
	require.NoError(t, err)
	i := strings.Index(text, "explore bound=")
	require.Positive(t, i)
	for _, tc := range []struct {
		build string
		stale bool
	}{{"src:000000000000", true}, {sim.SourceBuild(), false}} {
		sched := "schedule mode=bulk\n" + dst.FormatScheduleOn([]string{"u9|client|a1 nothing"}, tc.build) + "----\n\n"
		synctest.Test(t, func(t *testing.T) {
			_, err := ExploreText(t, "two-senders", text[:i]+sched+text[i:], system.ModeBulk, DefaultExploreOptions())
			require.Error(t, err)
			var stale *StaleScheduleError
			assert.Equal(t, tc.stale, errors.As(err, &stale), "%v", err)
			if tc.stale {
				assert.Contains(t, err.Error(), "this schedule no longer applies to this build (found on src:000000000000, this is src:")
			} else {
				assert.Contains(t, err.Error(), "a determinism bug")
			}
		})
	}
}

// TestExplorePartitionChoice: with partitions=1 the explorer may cut two
// nodes off from each other at any step (a lazy op per pair, healed by
// the liveness phase). Bulk mode, a send to a member on the other node,
// the whole search at bound 0 (237 schedules): some cut the relay (it is
// retried, then left to the catch-up), none breaks a property, and the
// 8 s horizon lets every retry end. (Stream mode runs 1,606 schedules and
// single 250: too long for go test; docs/model-checking.md.)
func TestExplorePartitionChoice(t *testing.T) {
	r := exploreSendAcross(t, "partitions=1 horizon=8s")
	assert.True(t, r.Exhausted)
	assert.Positive(t, r.Faults, "no schedule chose the partition")
	assert.Zero(t, r.Failing)
	assert.Positive(t, r.Probes["relay.retried"], "no relay met the cut: %v", r.Probes)
	assert.Equal(t, 1, r.Opts.Budget[sim.ExPartition])
}

// exploreSendAcross searches, in bulk mode at bound 0, a story where u1
// on n1 sends to r1 while u2, a member, is on n2, with the explore
// block's extra arguments args.
func exploreSendAcross(t *testing.T, args string) *ExploreReport {
	story := `cluster nodes=2
----

connect user=u1 node=n1
----

connect user=u2 node=n2
----

join user=u1 room=r1
----

join user=u2 room=r1
----

run for=1s
----

explore bound=0 ` + args + `
send user=u1 room=r1 msg=m1
----
`
	var r *ExploreReport
	synctest.Test(t, func(t *testing.T) {
		reps, err := ExploreText(t, args, story, system.ModeBulk, DefaultExploreOptions())
		require.NoError(t, err)
		require.Len(t, reps, 1)
		r = reps[0]
	})
	return r
}

// TestExploreClientRequestChoices: a client's request lost on its way in
// (client-drops), handled with its answer lost (client-loses) or
// delivered twice (client-dups), each a choice within its budget, on a
// send to a member on the other node (bulk, bound 0, the whole search).
// Each is chosen in some schedule and breaks no property; a lost answer
// and a second copy each reach the send's duplicate path (the retry, or
// the copy, finds the message already sequenced).
func TestExploreClientRequestChoices(t *testing.T) {
	for _, tc := range []struct {
		arg, class, probe string
	}{
		{"client-drops", sim.ExClientDrop, ""},
		{"client-loses", sim.ExClientLose, "chat.duplicate-from-log"},
		{"client-dups", sim.ExClientDup, "chat.duplicate-from-log"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			r := exploreSendAcross(t, "horizon=6s "+tc.arg+"=1")
			assert.True(t, r.Exhausted)
			assert.Positive(t, r.Faults, "no schedule chose the fault")
			assert.Zero(t, r.Failing)
			assert.Equal(t, 1, r.Opts.Budget[tc.class])
			if tc.probe != "" {
				assert.Positive(t, r.Probes[tc.probe], "%v", r.Probes)
			}
			t.Logf("%s: %d schedules, %d with the fault, probes %v", tc.arg, r.Schedules, r.Faults, r.Probes)
		})
	}
}

// Timers as choices: the story's timers= is a budget like the faults'
// (a fixed -timers wins over it), and with it the catch-up tick lands
// inside the live delivery of catch-up-tick, which -timers 0 never
// shows (docs/model-checking.md, "Timers as choices").
func TestExploreTimersBudget(t *testing.T) {
	text, err := Story("catch-up-tick")
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		on, err := ExploreText(t, "catch-up-tick", text, system.ModeSingle, DefaultExploreOptions())
		require.NoError(t, err)
		require.Len(t, on, 1)
		assert.Equal(t, 1, on[0].Opts.Budget[sim.ExTimer])
		assert.True(t, on[0].Exhausted)
		assert.Positive(t, on[0].Probes[system.ProbeSessionCatchUpFilled], "the tick fills m2 from the log before the live delivery")
		assert.Positive(t, on[0].Faults, "a fired timer counts as a choice like a fault")

		def := DefaultExploreOptions()
		def.Fixed = map[string]bool{"timers": true} // -timers 0
		off, err := ExploreText(t, "catch-up-tick", text, system.ModeSingle, def)
		require.NoError(t, err)
		require.Len(t, off, 1)
		assert.Equal(t, []string{"timers=1 (fixed: 0)"}, off[0].Overridden)
		assert.True(t, off[0].Exhausted)
		assert.Equal(t, 1, off[0].Schedules, "timers as barriers: one schedule at bound 0")
		assert.Zero(t, off[0].Probes[system.ProbeSessionCatchUpFilled])
		assert.Zero(t, off[0].Faults)
	})
}

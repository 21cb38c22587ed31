package dst

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A toy program for the search: threads of steps on shared variables.
// A write mixes the thread and step into the variable (order matters); a
// read logs the value. A spawn starts another thread (its first op parks
// beside the spawner's next one: one event parks two ops); a signal closes
// a channel another thread waits on before its next step (the waiter's op
// is caused by the signal). Each thread may be crashed (a lazy op) and
// each step dropped (a fault), within the explorer's budgets.
type toyStep struct {
	obj   string
	write bool
	// spawn > 0 starts thread spawn (thread 0 is never spawned).
	spawn int
	// signal > 0 closes channel signal; wait > 0 waits for channel wait
	// to be closed before the step is gated (a step of no footprint of
	// its own but its thread's).
	signal, wait int
	// key, when set, gates the step as op "shared|step|<key>" whatever its
	// thread: two steps of one key are two instances of one op key.
	key string
	// sleep > 0: the thread waits that long of virtual time (a timer)
	// before the step is gated. Time runs on only when nothing is ready
	// (a barrier), as every timer does under exploration.
	sleep time.Duration
}

func wr(obj string) toyStep    { return toyStep{obj: obj, write: true} }
func rd(obj string) toyStep    { return toyStep{obj: obj} }
func spawn(thread int) toyStep { return toyStep{spawn: thread} }

type toyProgram [][]toyStep

var exploreGaps = flag.Bool("explore.gaps", false, "run TestExploreKnownGaps: programs the reduced search is known to get wrong")

// crashStep, when >= 0, adds a step that crashes that thread: an ordinary
// op (not a lazy one), which disables the thread's parked op.
var crashStep = -1

func (st toyStep) String() string {
	var s string
	switch {
	case st.spawn > 0:
		s = fmt.Sprintf("spawn(t%d)", st.spawn)
	case st.signal > 0:
		s = fmt.Sprintf("signal(c%d)", st.signal)
	default:
		s = map[bool]string{true: "w", false: "r"}[st.write] + st.obj
	}
	if st.wait > 0 {
		s = fmt.Sprintf("wait(c%d)+%s", st.wait, s)
	}
	if st.sleep > 0 {
		s = fmt.Sprintf("sleep(%v)+%s", st.sleep, s)
	}
	return s
}

// dynamic: some op parks only after an event (a spawn, a signal).
func (p toyProgram) dynamic() bool {
	for _, th := range p {
		for _, st := range th {
			if st.spawn > 0 || st.wait > 0 {
				return true
			}
		}
	}
	return false
}

func (p toyProgram) String() string {
	var b strings.Builder
	for i, th := range p {
		fmt.Fprintf(&b, "t%d:", i)
		for _, st := range th {
			fmt.Fprintf(&b, " %s", st)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// runToy runs p once under e and returns its outcome: the variables and
// every thread's log.
func runToy(t *testing.T, p toyProgram, e *Explorer, faults bool) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(First{}, NewTrace(false, 10), nil)
		s.Explorer = e
		var mu sync.Mutex
		vars := map[string]int{}
		logs := make([][]string, len(p))
		crashed := make([]bool, len(p))
		over := false // the horizon: threads still running stop there
		chans := map[int]chan struct{}{}
		spawned := map[int]bool{}
		for _, th := range p {
			for _, st := range th {
				if st.signal > 0 {
					chans[st.signal] = make(chan struct{})
				}
				if st.spawn > 0 {
					spawned[st.spawn] = true
				}
			}
		}
		closed := map[int]bool{}
		var wg sync.WaitGroup
		e.Arm(s)
		if k := crashStep; k >= 0 && k < len(p) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Gate(GateSpec{Node: "chaos", Kind: "crash", ID: fmt.Sprintf("t%d", k), Touch: []Access{W(fmt.Sprintf("thr:t%d", k))}})
				mu.Lock()
				crashed[k] = true
				mu.Unlock()
				s.Hold(&crashed[k])
			}()
		}
		var start func(ti int)
		start = func(ti int) {
			th := p[ti]
			name := fmt.Sprintf("t%d", ti)
			owner := &crashed[ti]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for si, st := range th {
					if st.wait > 0 {
						<-chans[st.wait]
					}
					if st.sleep > 0 {
						time.Sleep(st.sleep)
					}
					g := GateSpec{Owner: owner, Node: name, Kind: "step", ID: fmt.Sprint(si), Touch: []Access{R("thr:" + name)}}
					if st.key != "" {
						g.Node, g.ID = "shared", st.key
					}
					if st.obj != "" {
						g.Touch = append(g.Touch, Access{Obj: st.obj, Write: st.write})
					}
					if faults {
						g.Faults = []string{"drop"}
					}
					f := s.Gate(g)
					mu.Lock()
					if over {
						mu.Unlock()
						return
					}
					if crashed[ti] {
						logs[ti] = append(logs[ti], "crashed")
						mu.Unlock()
						return
					}
					switch {
					case f == "drop":
						logs[ti] = append(logs[ti], "dropped")
					case st.spawn > 0:
						start(st.spawn)
					case st.signal > 0:
						if !closed[st.signal] {
							closed[st.signal] = true
							close(chans[st.signal])
						}
					case st.write:
						vars[st.obj] = vars[st.obj]*7 + ti*3 + si + 1
					default:
						logs[ti] = append(logs[ti], fmt.Sprint(vars[st.obj]))
					}
					mu.Unlock()
				}
			}()
		}
		for ti := range p {
			name := fmt.Sprintf("t%d", ti)
			if faults {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if s.Gate(GateSpec{Node: name, Kind: "crash", ID: name, Lazy: true, Class: "crash", Touch: []Access{W("thr:" + name)}}) == "fire" {
						mu.Lock()
						crashed[ti] = true
						mu.Unlock()
						// As a node's crash does: its parked op never runs
						// (until teardown), so the crash disables it.
						s.Hold(&crashed[ti])
					}
				}()
			}
			if !spawned[ti] {
				start(ti)
			}
		}
		s.RunFor(time.Second)
		e.Disarm(s)
		mu.Lock()
		over = true
		for c, ch := range chans {
			if !closed[c] {
				closed[c] = true
				close(ch) // a waiter left blocked stops at its gate
			}
		}
		mu.Unlock()
		s.PassThrough()
		wg.Wait()
		keys := make([]string, 0, len(vars))
		for k := range vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%d ", k, vars[k])
		}
		for i, l := range logs {
			fmt.Fprintf(&b, "t%d[%s] ", i, strings.Join(l, ","))
		}
		out = b.String()
	})
	return out
}

// searchToy runs the whole search and returns the distinct outcomes and
// the number of schedules.
func searchToy(t *testing.T, p toyProgram, reduce bool, bound int, budget map[string]int) (map[string]bool, int) {
	return searchToyUpTo(t, p, reduce, bound, budget, 20000)
}

// searchToyUpTo gives up (nil, -1) past limit schedules.
func searchToyUpTo(t *testing.T, p toyProgram, reduce bool, bound int, budget map[string]int, limit int) (map[string]bool, int) {
	e := NewExplorer(reduce, bound, budget)
	seen := map[string]bool{}
	faults := len(budget) > 0 && budget[TimerClass] == 0 // crashes and drops
	for {
		seen[runToy(t, p, e, faults)] = true
		require.NoError(t, e.Divergence)
		if !e.Next() {
			break
		}
		if e.Schedules >= limit {
			return nil, -1 // too big to compare: the caller skips it
		}
	}
	return seen, e.Schedules
}

// Two independent threads have one outcome; the reduced search runs one
// schedule, the naive one all six interleavings.
func TestExploreIndependentThreads(t *testing.T) {
	p := toyProgram{{wr("x"), rd("x")}, {wr("y"), rd("y")}}
	naive, nn := searchToy(t, p, false, -1, nil)
	reduced, nr := searchToy(t, p, true, -1, nil)
	assert.Equal(t, naive, reduced)
	assert.Equal(t, 6, nn)
	assert.Equal(t, 1, nr)
}

// A write racing a read: both orders are explored, and nothing more.
func TestExploreRace(t *testing.T) {
	p := toyProgram{{wr("x")}, {rd("x")}, {wr("y")}}
	naive, _ := searchToy(t, p, false, -1, nil)
	reduced, nr := searchToy(t, p, true, -1, nil)
	assert.Equal(t, naive, reduced)
	assert.Len(t, reduced, 2)
	assert.Equal(t, 2, nr)
}

// BPOR's switch point and siblings: a spawn parks the spawner's next op
// and the child's first at once; the lowest key continues the chain, so
// starting the other is a preemption, not the chain going on. A switch
// point that took it for the chain's continuation (its parent is the event
// before it) put the reversal of ry/wy where wx was no preemption yet
// spent, and the bound refused it: 3 outcomes of the naive search's 4.
func TestExploreBoundSiblings(t *testing.T) {
	p := toyProgram{{spawn(2), spawn(1), rd("x")}, {wr("x"), rd("y")}, {wr("y")}}
	for _, bound := range []int{0, 1, 2, -1} {
		naive, _ := searchToy(t, p, false, bound, nil)
		reduced, nr := searchToy(t, p, true, bound, nil)
		assert.Equal(t, keys(naive), keys(reduced), "bound %d (reduced: %d schedules)", bound, nr)
	}
	naive, _ := searchToy(t, p, false, 1, nil)
	assert.Len(t, naive, 4, "bound 1 reaches every outcome")
	// Two more the random programs found with the switch point blind to
	// siblings (issue 31), each missing one outcome at bound 1.
	for _, p := range []toyProgram{
		{{rd("y"), spawn(2), rd("z")}, {wr("y"), rd("z")}, {rd("x"), wr("z"), rd("x")}},
		{{wr("y"), spawn(1), rd("y"), rd("x")}, {rd("x"), wr("y")}, {rd("x")}, {rd("y")}},
	} {
		naive, _ := searchToy(t, p, false, 1, nil)
		reduced, nr := searchToy(t, p, true, 1, nil)
		assert.Equal(t, keys(naive), keys(reduced), "program %s bound 1 (reduced: %d schedules)", p, nr)
	}
}

// Happens-before by op instance: t0's wx and t1's later rx are two
// instances of one op key (the key is free again once wx ran, as a
// client's retried request or a resent item may reuse theirs). Linked by
// key, the rx looked like the wx's own later event (a delay's release),
// ordered after it: their race was never reversed and the reduced search
// found one outcome of two.
func TestExploreHappensBeforeByInstance(t *testing.T) {
	k := func(st toyStep) toyStep { st.key = "k"; return st }
	p := toyProgram{{k(wr("x"))}, {rd("y"), k(rd("x"))}}
	for _, bound := range []int{-1, 0, 1} {
		naive, _ := searchToy(t, p, false, bound, nil)
		reduced, nr := searchToy(t, p, true, bound, nil)
		assert.Equal(t, keys(naive), keys(reduced), "bound %d (reduced: %d schedules)", bound, nr)
	}
	naive, _ := searchToy(t, p, false, -1, nil)
	assert.Len(t, naive, 2)
}

// A thread a block spawned: the conservative point of a race is where the
// block began, and when j's side was not parked there yet, the first level
// of the block where it is (its creation), at the same cost.
func TestExploreBoundSpawnedInBlock(t *testing.T) {
	p := toyProgram{{spawn(1), spawn(2), rd("x"), wr("x")}, {rd("x"), rd("x"), {signal: 1}}, {{obj: "x", wait: 1}}, {rd("x"), rd("x")}}
	naive, _ := searchToy(t, p, false, 1, nil)
	reduced, _ := searchToy(t, p, true, 1, nil)
	assert.Equal(t, keys(naive), keys(reduced))
}

// Known gaps, kept as programs (docs/model-checking.md, the limits): the
// reduced search finds fewer outcomes than the naive one on each. Signals
// under a bound: a waiter's op is caused by whichever of two independent
// events came last, so chains change when they commute. A crash before a
// thread's op parks (not yet spawned, or waiting) holds it unseen: no race
// with it is found, bounded or not. Run with -explore.gaps to see them.
func TestExploreKnownGaps(t *testing.T) {
	if !*exploreGaps {
		t.Skip("known gaps: -explore.gaps shows them")
	}
	sig := func(c int) toyStep { return toyStep{signal: c} }
	waitRd := func(c int, obj string) toyStep { return toyStep{obj: obj, wait: c} }
	waitWr := func(c int, obj string) toyStep { return toyStep{obj: obj, write: true, wait: c} }
	for _, tc := range []struct {
		p     toyProgram
		bound int
		crash int
	}{
		{toyProgram{{wr("z"), rd("y"), spawn(2)}, {wr("z"), sig(1), wr("x"), spawn(3)}, {wr("x"), waitRd(1, "x")}, {rd("x"), rd("y"), rd("x")}}, 1, -1},
		{toyProgram{{spawn(2), waitWr(1, "z"), wr("x"), rd("y")}, {rd("x")}, {wr("y")}, {wr("y"), rd("y"), sig(1), rd("z")}}, 1, -1},
		{toyProgram{{sig(1), rd("x")}, {waitRd(1, "x")}, {rd("x")}}, -1, 1},
	} {
		crashStep = tc.crash
		naive, _ := searchToy(t, tc.p, false, tc.bound, nil)
		reduced, _ := searchToy(t, tc.p, true, tc.bound, nil)
		crashStep = -1
		assert.Equal(t, keys(naive), keys(reduced), "program %s bound %d crash step %d", tc.p, tc.bound, tc.crash)
	}
}

// Soundness on random small programs: the reduced search finds exactly
// the outcomes of the naive one, unbounded, bounded, and with faults as
// choices. Threads may be spawned by another's step (one event parks two
// ops: the chain goes on with one, the other is a sibling) and may wait
// for another's signal (the waiter's op is caused by the signal).
func TestExploreSoundOnRandomPrograms(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := rapid.IntRange(-1, 2).Draw(rt, "bound")
		p := drawToyProgram(rt, bound < 0)
		threads := len(p)
		// A crash before a thread's op parks (spawned or waiting) holds it
		// unseen: no race with it is found yet (docs/model-checking.md).
		crashes := !p.dynamic()
		if crashes {
			crashStep = rapid.IntRange(-1, threads-1).Draw(rt, "crash step")
		}
		defer func() { crashStep = -1 }()
		var budget map[string]int
		if crashes && rapid.Bool().Draw(rt, "faults") {
			budget = map[string]int{"crash": 1, "drop": rapid.IntRange(0, 1).Draw(rt, "drops")}
		}
		naive, nn := searchToy(t, p, false, bound, budget)
		if nn < 0 {
			rt.Skip("the naive search is too big to compare")
		}
		reduced, nr := searchToy(t, p, true, bound, budget)
		if !assert.Equal(t, keys(naive), keys(reduced), "program %s bound %d budget %v crash step %d", p, bound, budget, crashStep) {
			rt.Fatalf("outcomes differ")
		}
		assert.LessOrEqual(t, nr, nn)
	})
}

// Every bound of one program, without faults: reduced == naive at bounds
// 0, 1, 2 and none (the bound's soundness on its own).
func TestExploreBoundSoundOnRandomPrograms(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := drawToyProgram(rt, false)
		for _, bound := range []int{0, 1, 2, -1} {
			naive, nn := searchToyUpTo(t, p, false, bound, nil, 2000)
			if nn < 0 {
				rt.Skip("the naive search is too big to compare")
			}
			reduced, _ := searchToy(t, p, true, bound, nil)
			if !assert.Equal(t, keys(naive), keys(reduced), "program %s bound %d", p, bound) {
				rt.Fatalf("outcomes differ")
			}
		}
	})
}

// Timers: random programs with spawns whose steps may first wait on a
// timer (sleep: virtual time runs on only when nothing is ready, a
// barrier dependent with everything), reduced == naive at bounds 0, 1, 2
// and none. Timers are drawn after the program, so the programs of the
// tests above keep their draws.
func TestExploreTimersSoundOnRandomPrograms(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := drawToyProgram(rt, false)
		for i := range p {
			for j := range p[i] {
				if p[i][j].spawn == 0 && rapid.IntRange(0, 3).Draw(rt, "timer") == 0 {
					p[i][j].sleep = time.Duration(rapid.IntRange(1, 2).Draw(rt, "ms")) * time.Millisecond
				}
			}
		}
		for _, bound := range []int{0, 1, 2, -1} {
			naive, nn := searchToyUpTo(t, p, false, bound, nil, 2000)
			if nn < 0 {
				rt.Skip("the naive search is too big to compare")
			}
			reduced, _ := searchToy(t, p, true, bound, nil)
			if !assert.Equal(t, keys(naive), keys(reduced), "program %s bound %d", p, bound) {
				rt.Fatalf("outcomes differ")
			}
		}
	})
}

// Timers fired early (TimerClass): the same random programs with timers,
// within a budget of 1 or 2 timers a schedule may fire while work is
// ready (virtual time runs on until the next sleeping step parks, or the
// horizon). The fired timer is dependent with everything. Reduced ==
// naive at bounds 0, 1, 2 and none.
func TestExploreEarlyTimersSoundOnRandomPrograms(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := drawToyProgram(rt, false)
		for i := range p {
			for j := range p[i] {
				if p[i][j].spawn == 0 && rapid.IntRange(0, 2).Draw(rt, "timer") == 0 {
					p[i][j].sleep = time.Duration(rapid.IntRange(1, 2).Draw(rt, "ms")) * time.Millisecond
				}
			}
		}
		budget := map[string]int{TimerClass: rapid.IntRange(1, 2).Draw(rt, "timers")}
		for _, bound := range []int{0, 1, 2, -1} {
			naive, nn := searchToyUpTo(t, p, false, bound, budget, 2000)
			if nn < 0 {
				rt.Skip("the naive search is too big to compare")
			}
			reduced, _ := searchToy(t, p, true, bound, budget)
			if !assert.Equal(t, keys(naive), keys(reduced), "program %s bound %d budget %v", p, bound, budget) {
				rt.Fatalf("outcomes differ")
			}
		}
	})
}

// A timer fired early lands between two steps of work in flight: t1's
// write, after its sleep, comes before t0's write or between it and t0's
// read only when a timer may fire while t0's steps are ready (timers=1);
// with timers as barriers (timers=0) it comes after both.
func TestExploreTimerFiresBetweenSteps(t *testing.T) {
	p := toyProgram{{wr("x"), rd("x")}, {{obj: "x", write: true, sleep: time.Millisecond}}}
	after := "x=11 t0[1] t1[] "    // t0: x = 1, reads 1; then t1: x = 1*7+4
	between := "x=11 t0[11] t1[] " // t0: x = 1; t1: x = 11; t0 reads 11
	before := "x=29 t0[29] t1[] "  // t1: x = 4; then t0: x = 4*7+1, reads it
	for _, reduce := range []bool{false, true} {
		off, _ := searchToy(t, p, reduce, -1, nil)
		on, _ := searchToy(t, p, reduce, -1, map[string]int{TimerClass: 1})
		assert.Equal(t, []string{after}, keys(off), "reduce=%v: timers are barriers", reduce)
		assert.ElementsMatch(t, []string{after, before, between}, keys(on), "reduce=%v: a timer fired early", reduce)
	}
}

// drawToyProgram draws 1-4 threads of 1-3 steps; a thread other than t0
// may be spawned by a step of an earlier thread, and one thread's step may
// wait for another's signal.
func drawToyProgram(rt *rapid.T, signals bool) toyProgram {
	threads := rapid.IntRange(1, 4).Draw(rt, "threads")
	p := make(toyProgram, threads)
	for i := range p {
		n := rapid.IntRange(1, 3).Draw(rt, "steps")
		for range n {
			p[i] = append(p[i], toyStep{
				obj:   rapid.SampledFrom([]string{"x", "y", "z"}).Draw(rt, "obj"),
				write: rapid.Bool().Draw(rt, "write"),
			})
		}
	}
	insert := func(th int, st toyStep) {
		at := rapid.IntRange(0, len(p[th])).Draw(rt, "at")
		p[th] = append(p[th][:at], append([]toyStep{st}, p[th][at:]...)...)
	}
	for i := 1; i < threads; i++ {
		if rapid.Bool().Draw(rt, "spawned") {
			insert(rapid.IntRange(0, i-1).Draw(rt, "spawner"), spawn(i))
		}
	}
	if signals && threads > 1 && rapid.Bool().Draw(rt, "signal") {
		a := rapid.IntRange(0, threads-1).Draw(rt, "signaller")
		b := (a + rapid.IntRange(1, threads-1).Draw(rt, "waiter")) % threads
		w := rapid.IntRange(0, len(p[b])-1).Draw(rt, "waiting step")
		insert(a, toyStep{signal: 1})
		p[b][w].wait = 1
	}
	return p
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A schedule replays by op key, and a key that is not parked is reported
// as a divergence.
func TestExploreReplayByKey(t *testing.T) {
	p := toyProgram{{wr("x")}, {rd("x")}}
	e := NewExplorer(true, -1, nil)
	first := runToy(t, p, e, false)
	require.True(t, e.Next())
	second := runToy(t, p, e, false)
	sched := e.Schedule()
	text := FormatSchedule(sched)
	back, err := ParseSchedule(text)
	require.NoError(t, err)
	assert.Equal(t, sched, back)

	r := NewExplorer(true, -1, nil)
	r.Replay = back
	assert.Equal(t, second, runToy(t, p, r, false))
	assert.NoError(t, r.Divergence)
	assert.NotEqual(t, first, second)

	bad := NewExplorer(true, -1, nil)
	bad.Replay = []string{"t9|step|0"}
	runToy(t, p, bad, false)
	assert.ErrorContains(t, bad.Divergence, `"t9|step|0" is not parked`)
}

// A schedule file names the build it was found on; a file from before
// that carries none and still parses to the same choices.
func TestScheduleCarriesItsBuild(t *testing.T) {
	sched := []string{"n1|redis|a", "n2|rpc|b!drop", tick}
	text := FormatScheduleOn(sched, "src:0123456789ab vcs:abc+dirty")
	assert.Equal(t, "src:0123456789ab vcs:abc+dirty", ScheduleBuild(text))
	back, err := ParseSchedule(text)
	require.NoError(t, err)
	assert.Equal(t, sched, back)
	old := FormatSchedule(sched)
	assert.Equal(t, "", ScheduleBuild(old))
	back, err = ParseSchedule(old)
	require.NoError(t, err)
	assert.Equal(t, sched, back)
}

package dst

import (
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
// read logs the value. Each thread may be crashed (a lazy op) and each step
// dropped (a fault), within the explorer's budgets.
type toyStep struct {
	obj   string
	write bool
}

type toyProgram [][]toyStep

// crashStep, when >= 0, adds a step that crashes that thread: an ordinary
// op (not a lazy one), which disables the thread's parked op.
var crashStep = -1

func (p toyProgram) String() string {
	var b strings.Builder
	for i, th := range p {
		fmt.Fprintf(&b, "t%d:", i)
		for _, st := range th {
			fmt.Fprintf(&b, " %s%s", map[bool]string{true: "w", false: "r"}[st.write], st.obj)
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
		for ti, th := range p {
			name := fmt.Sprintf("t%d", ti)
			owner := &crashed[ti]
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
						s.Hold(owner)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for si, st := range th {
					g := GateSpec{Owner: owner, Node: name, Kind: "step", ID: fmt.Sprint(si), Touch: []Access{R("thr:" + name), {Obj: st.obj, Write: st.write}}}
					if faults {
						g.Faults = []string{"drop"}
					}
					f := s.Gate(g)
					mu.Lock()
					if crashed[ti] {
						logs[ti] = append(logs[ti], "crashed")
						mu.Unlock()
						return
					}
					switch {
					case f == "drop":
						logs[ti] = append(logs[ti], "dropped")
					case st.write:
						vars[st.obj] = vars[st.obj]*7 + ti*3 + si + 1
					default:
						logs[ti] = append(logs[ti], fmt.Sprint(vars[st.obj]))
					}
					mu.Unlock()
				}
			}()
		}
		s.RunFor(time.Second)
		e.Disarm(s)
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
	e := NewExplorer(reduce, bound, budget)
	seen := map[string]bool{}
	faults := len(budget) > 0
	for {
		seen[runToy(t, p, e, faults)] = true
		require.NoError(t, e.Divergence)
		if !e.Next() {
			break
		}
		if e.Schedules >= 20000 {
			return nil, -1 // too big to compare: the caller skips it
		}
	}
	return seen, e.Schedules
}

// Two independent threads have one outcome; the reduced search runs one
// schedule, the naive one all six interleavings.
func TestExploreIndependentThreads(t *testing.T) {
	p := toyProgram{{{"x", true}, {"x", false}}, {{"y", true}, {"y", false}}}
	naive, nn := searchToy(t, p, false, -1, nil)
	reduced, nr := searchToy(t, p, true, -1, nil)
	assert.Equal(t, naive, reduced)
	assert.Equal(t, 6, nn)
	assert.Equal(t, 1, nr)
}

// A write racing a read: both orders are explored, and nothing more.
func TestExploreRace(t *testing.T) {
	p := toyProgram{{{"x", true}}, {{"x", false}}, {{"y", true}}}
	naive, _ := searchToy(t, p, false, -1, nil)
	reduced, nr := searchToy(t, p, true, -1, nil)
	assert.Equal(t, naive, reduced)
	assert.Len(t, reduced, 2)
	assert.Equal(t, 2, nr)
}

// Soundness on random small programs: the reduced search finds exactly
// the outcomes of the naive one, unbounded, bounded, and with faults as
// choices.
func TestExploreSoundOnRandomPrograms(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		threads := rapid.IntRange(1, 3).Draw(rt, "threads")
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
		bound := rapid.IntRange(-1, 2).Draw(rt, "bound")
		crashStep = rapid.IntRange(-1, threads-1).Draw(rt, "crash step")
		defer func() { crashStep = -1 }()
		var budget map[string]int
		if rapid.Bool().Draw(rt, "faults") {
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
	p := toyProgram{{{"x", true}}, {{"x", false}}}
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

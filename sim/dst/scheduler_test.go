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
)

// runGoroutines parks two goroutines (a and b) at two gates each under s and
// returns the order in which the four steps ran.
func runGoroutines(t *testing.T, strategy Strategy) string {
	var order []string
	var mu sync.Mutex
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(strategy, NewTrace(false, 10), nil)
		var wg sync.WaitGroup
		for _, g := range []string{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; i <= 2; i++ {
					s.Gate(GateSpec{Node: "x", Kind: "step", ID: fmt.Sprintf("%s%d", g, i)})
					mu.Lock()
					order = append(order, fmt.Sprintf("%s%d", g, i))
					mu.Unlock()
				}
			}()
		}
		s.RunFor(time.Second)
		wg.Wait()
	})
	return strings.Join(order, " ")
}

// Two goroutines of two steps each have C(4,2) = 6 interleavings. Counting
// a pick other than the first ready op as a preemption: bound 0 allows only
// a1 a2 b1 b2; bound 1 adds a1 b1 a2 b2 and b1 a1 a2 b2; bound 2 all six.
func TestExhaustiveCountsSchedules(t *testing.T) {
	for _, tc := range []struct {
		bound int
		want  []string
	}{
		{0, []string{"a1 a2 b1 b2"}},
		{1, []string{"a1 a2 b1 b2", "a1 b1 a2 b2", "b1 a1 a2 b2"}},
		{2, []string{"a1 a2 b1 b2", "a1 b1 a2 b2", "a1 b1 b2 a2", "b1 a1 a2 b2", "b1 a1 b2 a2", "b1 b2 a1 a2"}},
	} {
		t.Run(fmt.Sprintf("bound=%d", tc.bound), func(t *testing.T) {
			e := &Exhaustive{Bound: tc.bound}
			var got []string
			for {
				got = append(got, runGoroutines(t, e))
				if !e.Next() {
					break
				}
			}
			assert.Equal(t, len(tc.want), e.Explored)
			sort.Strings(got)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRandomStrategyReplays(t *testing.T) {
	seen := map[string]bool{}
	for s := range 20 {
		a := runGoroutines(t, &Random{C: Seed(s).Rand()})
		b := runGoroutines(t, &Random{C: Seed(s).Rand()})
		require.Equal(t, a, b, "seed %d", s)
		seen[a] = true
	}
	assert.Greater(t, len(seen), 2, "twenty seeds explored fewer than three interleavings")
}

func TestPCTReplays(t *testing.T) {
	for s := range 10 {
		a := runGoroutines(t, NewPCT(Seed(s), 2, 4, 0))
		b := runGoroutines(t, NewPCT(Seed(s), 2, 4, 0))
		require.Equal(t, a, b, "seed %d", s)
	}
}

// A latency keeps an op from being picked before its time, whatever the
// strategy: exploration comes from time as well as order.
func TestSchedulerLatencyOrdersOps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lat := map[string]time.Duration{"slow": 5 * time.Millisecond, "fast": time.Millisecond}
		s := NewScheduler(&Random{C: Seed(1).Rand()}, NewTrace(true, 10), func(_, _, id string) time.Duration { return lat[id] })
		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, id := range []string{"slow", "fast"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Gate(GateSpec{Node: "n", Kind: "op", ID: id})
				mu.Lock()
				order = append(order, fmt.Sprintf("%s@%v", id, s.Now()))
				mu.Unlock()
			}()
		}
		s.RunFor(10 * time.Millisecond)
		wg.Wait()
		assert.Equal(t, []string{"fast@1ms", "slow@5ms"}, order)
	})
}

func TestSchedulerReportsKeyCollisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(&Random{C: Seed(1).Rand()}, NewTrace(false, 10), nil)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); s.Gate(GateSpec{Node: "n", Kind: "op", ID: "same"}) }()
		}
		s.RunFor(time.Millisecond)
		wg.Wait()
		assert.Equal(t, []string{"n|op|same"}, s.Collisions)
	})
}

// Two ops with the same id but different ties (the same request made by
// two calls in flight at once) park side by side, ordered by their ties,
// with the trace naming both by their id alone; a tie never moves an op
// past one whose id differed: "ab" still runs before "ab2", as without
// ties.
func TestSchedulerTiesSameIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(&Random{C: zeroChooser{}}, NewTrace(true, 10), nil)
		var wg sync.WaitGroup
		for _, g := range []struct{ id, tie string }{{"ab", "u1 a6"}, {"ab2", ""}, {"ab", "u1 a5"}} {
			wg.Add(1)
			go func() { defer wg.Done(); s.Gate(GateSpec{Node: "n", Kind: "op", ID: g.id, Tie: g.tie}) }()
		}
		s.RunFor(time.Millisecond)
		wg.Wait()
		assert.Empty(t, s.Collisions)
		assert.Equal(t, "t=00:00.000 n op ab\nt=00:00.000 n op ab\nt=00:00.000 n op ab2\n", s.trace.Text())
	})
}

// zeroChooser always picks the first ready op (the lowest key).
type zeroChooser struct{}

func (zeroChooser) IntN(int) int { return 0 }

// Two ops that share an id only because the system reused an identity
// (two messages given one seq) park side by side under their aliases,
// whichever arrived first, and are no collision; ops without aliases, or
// with the same one, still are.
func TestSchedulerAliasesSameIDs(t *testing.T) {
	for _, first := range []string{"u1 m1", "u2 m9"} {
		synctest.Test(t, func(t *testing.T) {
			s := NewScheduler(&Random{C: zeroChooser{}}, NewTrace(true, 10), nil)
			var picked []string
			var mu sync.Mutex
			var wg sync.WaitGroup
			second := map[string]string{"u1 m1": "u2 m9", "u2 m9": "u1 m1"}[first]
			for i, alias := range []string{first, second} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i) * time.Microsecond) // arrive in this order
					s.Gate(GateSpec{Node: "n", Kind: "op", ID: "r#7", Alias: alias})
					mu.Lock()
					picked = append(picked, alias)
					mu.Unlock()
				}()
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.Gate(GateSpec{Node: "n", Kind: "op", ID: "r#70"}) }()
			time.Sleep(time.Millisecond)
			s.RunFor(time.Millisecond)
			wg.Wait()
			assert.Empty(t, s.Collisions)
			assert.Equal(t, []string{"u1 m1", "u2 m9"}, picked, "ordered by alias, not by arrival")
			assert.Equal(t, "t=00:00.001 n op r#7\nt=00:00.001 n op r#7\nt=00:00.001 n op r#70\n", s.trace.Text())
		})
	}
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(&Random{C: Seed(1).Rand()}, NewTrace(false, 10), nil)
		var wg sync.WaitGroup
		for _, alias := range []string{"u1 m1", "u1 m1", ""} {
			wg.Add(1)
			go func() { defer wg.Done(); s.Gate(GateSpec{Node: "n", Kind: "op", ID: "same", Alias: alias}) }()
		}
		s.RunFor(time.Millisecond)
		wg.Wait()
		assert.Len(t, s.Collisions, 2, "the same alias twice, and no alias, are collisions")
	})
}

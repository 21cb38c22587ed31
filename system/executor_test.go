package system

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execIdleIDs lists the idle stack, bottom first, by worker id.
func execIdleIDs(e *Executor) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := []int{}
	for _, w := range e.idle {
		ids = append(ids, w.id)
	}
	return ids
}

// execBlockOn returns a task that waits for ch to be closed.
func execBlockOn(ch <-chan struct{}) func() { return func() { <-ch } }

// execLabels records BeforeTask calls; BeforeTask runs on many goroutines.
type execLabels struct {
	mu  sync.Mutex
	got []string
}

func (l *execLabels) record(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, label)
}

func (l *execLabels) sorted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.got))
}

func TestExecutorConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  ExecutorConfig
		want [3]int // core, max, queue
	}{
		{"zero value is the seeds' pool", ExecutorConfig{}, [3]int{30, 200, 1000}},
		{"queue kept when sizes default", ExecutorConfig{Queue: 5}, [3]int{30, 200, 5}},
		{"explicit sizes are literal", ExecutorConfig{Core: 2, Max: 4}, [3]int{2, 4, 0}},
		{"core zero allowed", ExecutorConfig{Max: 3, Queue: 1}, [3]int{0, 3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg.normalised()
			assert.Equal(t, tt.want, [3]int{c.Core, c.Max, c.Queue})
			assert.Equal(t, DefaultExecutorKeepAlive, c.KeepAlive)
		})
	}
	for _, bad := range []ExecutorConfig{
		{Core: -1, Max: 2}, {Core: 3, Max: 2}, {Core: 1, Max: 2, Queue: -1}, {KeepAlive: -time.Second},
	} {
		assert.Panics(t, func() { NewExecutor(bad) }, "%+v", bad)
	}
}

// TestExecutorGrowthOrder walks ThreadPoolExecutor's rules in order: a worker
// per submit below core, then the queue, then workers up to max, then the
// caller runs the task.
func TestExecutorGrowthOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		e := NewExecutor(ExecutorConfig{Core: 2, Max: 4, Queue: 3})
		steps := []struct {
			name                        string
			blocks                      bool
			pool, active, queued, peak  int
			callerRuns, done, submitted int64
		}{
			{"below core: first worker", true, 1, 1, 0, 1, 0, 0, 1},
			{"below core: second worker", true, 2, 2, 0, 2, 0, 0, 2},
			{"at core: queue 1", true, 2, 2, 1, 2, 0, 0, 3},
			{"at core: queue 2", true, 2, 2, 2, 2, 0, 0, 4},
			{"at core: queue 3", true, 2, 2, 3, 2, 0, 0, 5},
			{"queue full: third worker", true, 3, 3, 3, 3, 0, 0, 6},
			{"queue full: fourth worker", true, 4, 4, 3, 4, 0, 0, 7},
			{"saturated: caller runs", false, 4, 4, 3, 4, 1, 1, 8},
		}
		for i, s := range steps {
			ran := false
			fn := func() { ran = true }
			if s.blocks {
				fn = execBlockOn(release)
			}
			e.Submit(fmt.Sprint("t", i), fn)
			synctest.Wait()
			assert.Equal(t, !s.blocks, ran, s.name) // caller-runs ran before Submit returned
			require.Equal(t, ExecutorStats{
				Core: 2, Max: 4, Pool: s.pool, Active: s.active, Queued: s.queued, Peak: s.peak,
				Completed: s.done, CallerRuns: s.callerRuns, Submitted: s.submitted,
			}, e.Stats(), s.name)
		}

		close(release)
		synctest.Wait()
		require.Equal(t, ExecutorStats{
			Core: 2, Max: 4, Pool: 4, Peak: 4, Completed: 8, CallerRuns: 1, Submitted: 8,
		}, e.Stats(), "drained; workers above core still idle")

		e.Shutdown()
		assert.Equal(t, 0, e.Stats().Pool)
	})
}

// TestExecutorHandOffLIFO: a task goes to the most recently idled worker and
// does not grow the pool.
func TestExecutorHandOffLIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewExecutor(ExecutorConfig{Core: 4, Max: 6, Queue: 3})
		rel := make([]chan struct{}, 4)
		for i := range rel {
			rel[i] = make(chan struct{})
			e.Submit(fmt.Sprint("t", i), execBlockOn(rel[i])) // worker i+1 runs t<i>
		}
		for _, i := range []int{2, 0, 3, 1} {
			close(rel[i])
			synctest.Wait()
		}
		require.Equal(t, []int{3, 1, 4, 2}, execIdleIDs(e))

		holds := []chan struct{}{make(chan struct{}), make(chan struct{})}
		for i, wantIdle := range [][]int{{3, 1, 4}, {3, 1}} {
			e.Submit("handoff", execBlockOn(holds[i]))
			synctest.Wait()
			assert.Equal(t, wantIdle, execIdleIDs(e))
			s := e.Stats()
			assert.Equal(t, 4, s.Pool, "hand-off must not grow the pool")
			assert.Equal(t, 0, s.Queued)
		}
		assert.Equal(t, 2, e.Stats().Active)

		// Worker 4 runs holds[1], worker 2 holds[0]; a worker that finishes
		// goes back on top.
		for _, h := range holds {
			close(h)
			synctest.Wait()
		}
		assert.Equal(t, []int{3, 1, 2, 4}, execIdleIDs(e))
		e.Shutdown()
	})
}

func TestExecutorKeepAlive(t *testing.T) {
	const ka = 10 * time.Second
	tests := []struct {
		name       string
		core, max  int
		busy       int           // blocking tasks submitted (no queue: each gets a worker)
		handoffAt  time.Duration // >0: one quick task at this time after release
		checks     []time.Duration
		wantPool   []int
		wantRetire bool
	}{
		{
			name: "above core retire after keep-alive", core: 2, max: 4, busy: 4,
			checks: []time.Duration{ka - 1, ka, 10 * ka}, wantPool: []int{4, 2, 2},
		},
		{
			name: "core workers never retire", core: 2, max: 4, busy: 2,
			checks: []time.Duration{ka + 1, 100 * ka}, wantPool: []int{2, 2},
		},
		{
			// The hand-off restarts one worker's keep-alive: two of the three
			// others retire at ka, the third then waits untimed since the
			// pool is at core, and so does the restarted one at 1.5 ka.
			name: "hand-off restarts the keep-alive", core: 2, max: 4, busy: 4, handoffAt: ka / 2,
			checks: []time.Duration{ka - 1, ka, 2 * ka, 10 * ka}, wantPool: []int{4, 2, 2, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := NewExecutor(ExecutorConfig{Core: tt.core, Max: tt.max, KeepAlive: ka})
				release := make(chan struct{})
				for i := range tt.busy {
					e.Submit(fmt.Sprint("t", i), execBlockOn(release))
				}
				close(release)
				synctest.Wait()
				start := time.Now()
				if tt.handoffAt > 0 {
					time.Sleep(tt.handoffAt)
					e.Submit("quick", func() {})
					synctest.Wait()
				}
				for i, at := range tt.checks {
					time.Sleep(start.Add(at).Sub(time.Now()))
					synctest.Wait()
					s := e.Stats()
					assert.Equal(t, tt.wantPool[i], s.Pool, "pool at %v", at)
					assert.Equal(t, tt.wantPool[i], len(execIdleIDs(e)), "idle at %v", at)
					assert.Equal(t, tt.busy, s.Peak)
				}
				e.Shutdown()
			})
		})
	}
}

// TestExecutorShutdown: running and queued tasks finish, later submits are
// rejected, and every worker goroutine exits (the bubble fails otherwise).
func TestExecutorShutdown(t *testing.T) {
	t.Run("busy with a queue", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := NewExecutor(ExecutorConfig{Core: 2, Max: 4, Queue: 3})
			release := make(chan struct{})
			for i := range 7 {
				e.Submit(fmt.Sprint("t", i), execBlockOn(release))
			}
			returned := make(chan struct{})
			go func() { e.Shutdown(); close(returned) }()
			synctest.Wait()
			select {
			case <-returned:
				t.Fatal("Shutdown returned while tasks were running")
			default:
			}
			ran := false
			e.Submit("late", func() { ran = true })
			close(release)
			<-returned
			assert.False(t, ran, "a task submitted after Shutdown must not run")
			assert.Equal(t, ExecutorStats{
				Core: 2, Max: 4, Peak: 4, Completed: 7, Submitted: 7, Rejected: 1,
			}, e.Stats())
			e.Shutdown() // again: returns at once
		})
	})
	t.Run("idle workers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := NewExecutor(ExecutorConfig{Core: 1, Max: 3, KeepAlive: time.Minute})
			release := make(chan struct{})
			for i := range 3 {
				e.Submit(fmt.Sprint("t", i), execBlockOn(release))
			}
			close(release)
			synctest.Wait()
			require.Equal(t, 3, e.Stats().Pool)
			e.Shutdown()
			assert.Equal(t, ExecutorStats{Core: 1, Max: 3, Peak: 3, Completed: 3, Submitted: 3}, e.Stats())
		})
	})
	t.Run("never used", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := NewExecutor(ExecutorConfig{})
			e.Shutdown()
			assert.Equal(t, 0, e.Stats().Pool)
		})
	})
}

// TestExecutorBeforeTask: BeforeTask runs once per task, with its label, in
// the goroutine that runs the task, and may park there. It tells a
// caller-runs task (run by the submitter) from a task on a worker; AfterTask
// follows worker tasks only.
func TestExecutorBeforeTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec, done execLabels
		gates := map[string]chan struct{}{"worker": make(chan struct{}), "caller": make(chan struct{})}
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 1, BeforeTask: func(_ context.Context, label string, caller bool) {
			rec.record(fmt.Sprintf("%s caller=%t", label, caller))
			if g := gates[label]; g != nil {
				<-g
			}
		}, AfterTask: func(_ context.Context, label string) { done.record(label) }})
		var workerRan, callerRan bool

		// Worker path: Submit returns while BeforeTask is parked on the worker.
		e.Submit("worker", func() { workerRan = true })
		synctest.Wait()
		assert.Equal(t, []string{"worker caller=false"}, rec.sorted())
		assert.False(t, workerRan, "the task waits for BeforeTask")
		assert.Equal(t, 1, e.Stats().Active, "a parked task holds its worker")

		// Caller path: the pool is saturated (max 1, no queue), so BeforeTask
		// parks in the submitting goroutine and Submit has not returned.
		submitted := make(chan struct{})
		go func() { e.Submit("caller", func() { callerRan = true }); close(submitted) }()
		synctest.Wait()
		assert.Equal(t, []string{"caller caller=true", "worker caller=false"}, rec.sorted())
		assert.False(t, callerRan)
		select {
		case <-submitted:
			t.Fatal("caller-runs Submit returned before its task ran")
		default:
		}

		close(gates["caller"])
		<-submitted
		assert.True(t, callerRan)
		close(gates["worker"])
		synctest.Wait()
		assert.True(t, workerRan)

		e.Submit("again", func() {})
		synctest.Wait()
		assert.Equal(t, []string{"again caller=false", "caller caller=true", "worker caller=false"}, rec.sorted())
		assert.Equal(t, []string{"again", "worker"}, done.sorted(), "AfterTask runs after worker tasks only")
		s := e.Stats()
		assert.Equal(t, int64(3), s.Completed)
		assert.Equal(t, int64(1), s.CallerRuns)
		e.Shutdown()
	})
}

func TestExecutorPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type caught struct {
			label string
			value any
		}
		var got []caught // OnPanic runs on one goroutine at a time here
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 1, OnPanic: func(label string, v any) {
			got = append(got, caught{label, v})
		}})
		e.Submit("boom", func() { panic("boom") })
		synctest.Wait()
		ran := false
		e.Submit("after", func() { ran = true })
		synctest.Wait()
		assert.True(t, ran, "the worker survives a panic")
		assert.Equal(t, 1, e.Stats().Peak, "no replacement worker was needed")

		// Caller-runs: the panic is contained in the caller too.
		hold := make(chan struct{})
		e.Submit("hold", execBlockOn(hold))
		assert.NotPanics(t, func() { e.Submit("caller-boom", func() { panic("caller") }) })
		close(hold)
		synctest.Wait()

		assert.Equal(t, []caught{{"boom", "boom"}, {"caller-boom", "caller"}}, got)
		s := e.Stats()
		assert.Equal(t, int64(2), s.Panics)
		assert.Equal(t, int64(4), s.Completed)
		assert.Equal(t, int64(1), s.CallerRuns)
		e.Shutdown()
	})
}

// TestExecutorTaskGoexit: a task that ends its goroutine (t.FailNow does)
// costs the pool a worker, but the accounting stays right and Shutdown
// returns.
func TestExecutorTaskGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 1, Queue: 1})
		e.Submit("goexit", runtime.Goexit)
		synctest.Wait()
		s := e.Stats()
		assert.Equal(t, 0, s.Pool)
		assert.Equal(t, 0, s.Active)
		ran := false
		e.Submit("next", func() { ran = true })
		synctest.Wait()
		assert.True(t, ran, "a new worker replaces the lost one")
		e.Shutdown()
	})
}

// TestExecutorCoreZero: with no core workers a queued task still gets a
// worker, as Java's execute starts one when the pool is empty.
func TestExecutorCoreZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewExecutor(ExecutorConfig{Core: 0, Max: 2, Queue: 2, KeepAlive: time.Second})
		release := make(chan struct{})
		for i := range 3 {
			e.Submit(fmt.Sprint("t", i), execBlockOn(release))
		}
		synctest.Wait()
		s := e.Stats()
		assert.Equal(t, 1, s.Pool, "one worker until the queue is full")
		assert.Equal(t, 2, s.Queued)
		close(release)
		synctest.Wait()
		time.Sleep(time.Second + 1)
		synctest.Wait() // the workers' keep-alive timers retire them
		assert.Equal(t, 0, e.Stats().Pool, "with core 0 every idle worker retires")
		e.Shutdown()
	})
}

// TestExecutorSeedsPool: the seeds' configuration fills 200 workers and the
// 1000-slot queue before the caller runs a task, and shrinks back to 30.
// That takes 1200 blocked tasks (30 core + 1000 queued + 170 more workers),
// so the 1201st is the first caller-runs.
func TestExecutorSeedsPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := NewExecutor(ExecutorConfig{})
		release := make(chan struct{})
		submitted := 0
		for _, c := range []struct{ upTo, pool, queued int }{
			{30, 30, 0},       // core workers
			{1030, 30, 1000},  // then the queue
			{1200, 200, 1000}, // then up to max
		} {
			for ; submitted < c.upTo; submitted++ {
				e.Submit(fmt.Sprint("t", submitted), execBlockOn(release))
			}
			synctest.Wait()
			s := e.Stats()
			require.Equal(t, [2]int{c.pool, c.queued}, [2]int{s.Pool, s.Queued}, "after %d", c.upTo)
		}
		require.Equal(t, ExecutorStats{
			Core: 30, Max: 200, Pool: 200, Active: 200, Queued: 1000, Peak: 200, Submitted: 1200,
		}, e.Stats())

		ran := false
		e.Submit("overflow", func() { ran = true })
		assert.True(t, ran)
		assert.Equal(t, int64(1), e.Stats().CallerRuns)

		close(release)
		synctest.Wait()
		s := e.Stats()
		assert.Equal(t, int64(1201), s.Completed)
		assert.Equal(t, 200, s.Pool)
		time.Sleep(DefaultExecutorKeepAlive + 1)
		synctest.Wait() // the workers' keep-alive timers retire them
		assert.Equal(t, 30, e.Stats().Pool)
		e.Shutdown()
	})
}

// execDeterminismRun drives an executor with a seeded mix of submits, task
// completions and sleeps, and returns a trace of its state after each step.
// Tasks are submitted from their own goroutine so that a caller-runs task can
// block like any other.
func execDeterminismRun(t *testing.T, seed uint64) (trace []string, peak []int) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 0))
		var started execLabels
		e := NewExecutor(ExecutorConfig{Core: 2, Max: 5, Queue: 3, KeepAlive: 10 * time.Second,
			BeforeTask: func(_ context.Context, label string, _ bool) { started.record(label) }})
		release := map[string]chan struct{}{}
		var released []string
		running := func() []string {
			return slices.DeleteFunc(started.sorted(), func(l string) bool { return slices.Contains(released, l) })
		}
		t0 := time.Now()
		for step := range 400 {
			switch rng.IntN(3) {
			case 0:
				label := fmt.Sprintf("t%03d", step)
				release[label] = make(chan struct{})
				go e.Submit(label, execBlockOn(release[label]))
			case 1:
				if r := running(); len(r) > 0 {
					l := r[rng.IntN(len(r))]
					released = append(released, l)
					close(release[l])
				}
			case 2:
				time.Sleep(time.Duration(rng.IntN(12)) * time.Second)
			}
			synctest.Wait()
			s := e.Stats()
			peak = append(peak, s.Pool)
			trace = append(trace, fmt.Sprintf("%v %+v idle=%v", time.Since(t0), s, execIdleIDs(e)))
		}
		go e.Shutdown()
		// Shutdown runs what is queued: release tasks as they start.
		for synctest.Wait(); len(running()) > 0; synctest.Wait() {
			for _, l := range running() {
				released = append(released, l)
				close(release[l])
			}
		}
		trace = append(trace, fmt.Sprintf("end %+v", e.Stats()))
	})
	return trace, peak
}

// TestExecutorDeterminism: the same seed gives the same trace, including
// which idle worker takes each task and when workers retire. The workload
// must reach max, run tasks in callers and shrink, or it proves little.
func TestExecutorDeterminism(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			a, pools := execDeterminismRun(t, seed)
			b, _ := execDeterminismRun(t, seed)
			require.Equal(t, a, b)

			assert.Contains(t, pools, 5, "reached max")
			assert.NotContains(t, a[len(a)-1], "CallerRuns:0 ", "some tasks ran in callers")
			shrank := false
			for i := 1; i < len(pools); i++ {
				shrank = shrank || pools[i] < pools[i-1]
			}
			assert.True(t, shrank, "some workers retired")
		})
	}
}

// TestExecutorStatsHasNoSideEffects: taking a snapshot changes nothing. Idle
// workers whose keep-alive has run out but whose own timer has not retired
// them yet (a late timer, or a keep-alive bug) stay in the pool however often
// Stats is called: an observer must not hide what the workers failed to do.
// Their own timers retire them.
func TestExecutorStatsHasNoSideEffects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ka = 10 * time.Second
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 3, KeepAlive: ka})
		release := make(chan struct{})
		for i := range 3 {
			e.Submit(fmt.Sprint("t", i), execBlockOn(release))
		}
		close(release)
		synctest.Wait()
		require.Equal(t, 3, e.Stats().Pool)

		// Every idle worker's deadline has passed; their timers have not.
		e.mu.Lock()
		for _, w := range e.idle {
			require.True(t, w.timed, "worker %d waits with a keep-alive", w.id)
			w.deadline = time.Now().Add(-time.Nanosecond)
		}
		e.mu.Unlock()

		for i := range 3 {
			assert.Equal(t, 3, e.Stats().Pool, "Stats call %d retired a worker", i+1)
			assert.ElementsMatch(t, []int{1, 2, 3}, execIdleIDs(e), "Stats call %d", i+1)
		}

		time.Sleep(ka)
		synctest.Wait()
		assert.Equal(t, 1, e.Stats().Pool, "the workers' own timers retire them")
		e.Shutdown()
	})
}

// BeforeTask is given the context a task was submitted with, so an
// embedder learns what the task works for (the message of a dispatch) as
// data; Submit's tasks get the background context.
func TestExecutorBeforeTaskContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := map[string]Message{}
		var mu sync.Mutex
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 1, Queue: 4, BeforeTask: func(ctx context.Context, label string, _ bool) {
			m, _ := MessageOf(ctx)
			mu.Lock()
			got[label] = m
			mu.Unlock()
		}})
		defer e.Shutdown()
		e.SubmitContext(WithMessage(context.Background(), Message{Room: "r1", Seq: 5, Retry: true}), "deliver r1#5 u3", func() {})
		e.Submit("plain", func() {})
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[string]Message{"deliver r1#5 u3": {Room: "r1", Seq: 5, Retry: true}, "plain": {}}, got)
	})
}

// TestAfterTaskGetsTheTaskContext: AfterTask is given the context the task
// was submitted with, as BeforeTask is (an embedder reads the message a
// task worked for from it: MessageOf).
func TestAfterTaskGetsTheTaskContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []Message
		done := make(chan struct{})
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 1, AfterTask: func(ctx context.Context, _ string) {
			m, _ := MessageOf(ctx)
			got = append(got, m)
			close(done)
		}})
		defer e.Shutdown()
		m := Message{Room: "r", Seq: 7, Sender: "alice", ID: "m7"}
		e.SubmitContext(WithMessage(context.Background(), m), "deliver r#7 bob", func() {})
		<-done
		assert.Equal(t, []Message{m}, got)
	})
}

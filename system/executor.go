package system

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The seeds' pool: Java's ThreadPoolExecutor(30, 200, 60 s,
// LinkedBlockingQueue(1000), CallerRunsPolicy).
const (
	DefaultExecutorCore      = 30
	DefaultExecutorMax       = 200
	DefaultExecutorQueue     = 1000
	DefaultExecutorKeepAlive = 60 * time.Second
)

// ExecutorConfig sizes an Executor.
//
// The zero value is the seeds' pool. When Core and Max are both zero they
// become 30 and 200, and a zero Queue becomes 1000; as soon as Core or Max is
// set, the three sizes are taken literally (Queue 0 means no queue: direct
// hand-off to an idle worker, then growth, then caller-runs). This is the same
// rule as Config's defaults, so a node and a bare Executor agree.
type ExecutorConfig struct {
	Core  int // workers kept even when idle; may be 0
	Max   int // upper bound on workers; at least 1 and at least Core
	Queue int // capacity of the task queue; 0 means none

	// KeepAlive is how long an idle worker above Core waits for a task
	// before it retires. Zero means 60 s.
	KeepAlive time.Duration

	// BeforeTask, if set, is called in the goroutine that runs the task
	// just before the task runs: a worker (caller false), or the submitting
	// goroutine when the pool is saturated (caller-runs, caller true), so
	// that an embedder counting tasks on workers can leave caller-runs
	// tasks out. It may block: the simulation parks tasks there. ctx is
	// the context the task was submitted with (SubmitContext).
	BeforeTask func(ctx context.Context, label string, caller bool)
	// AfterTask, if set, is called in a worker after each task and before
	// it takes the next one; never after a caller-runs task. It may block
	// like BeforeTask.
	AfterTask func(ctx context.Context, label string)

	// OnPanic, if set, is called with a task's label and the recovered value
	// after a task (or BeforeTask) panicked. The panic is contained either
	// way: it is counted in Panics and the worker carries on.
	OnPanic func(label string, recovered any)

	// OnSubmit, if set, is told where each accepted task went: "worker" (a
	// new worker), "idle" (handed to an idle worker), "queue" or "caller".
	OnSubmit func(label, placement string)

	// Probe, if set, is told each code probe the executor hits
	// (probes.go: ProbeExec*), outside its lock.
	Probe func(name string)
}

// ExecutorStats is a snapshot of an Executor.
type ExecutorStats struct {
	Core, Max int
	Pool      int // live workers, idle or running
	Active    int // workers holding a task, from hand-off until it returns (time parked in BeforeTask included)
	Queued    int // tasks waiting in the queue
	Peak      int // largest Pool ever

	Completed  int64 // tasks that returned or panicked, on workers and on callers
	CallerRuns int64 // tasks run by the submitting goroutine because the pool was saturated
	Submitted  int64 // tasks accepted (everything but Rejected)
	Rejected   int64 // Submit calls after Shutdown; those tasks never run
	Panics     int64 // tasks whose panic was recovered
}

// Executor is a worker pool with the semantics of Java's ThreadPoolExecutor
// with a bounded queue and CallerRunsPolicy, as used by the seeds.
//
// It is deterministic for the simulation: given the same sequence of Submit
// calls and task completions at the same virtual instants, it makes the same
// choices. Idle workers are a LIFO stack, each with its own hand-off channel
// and keep-alive timer (no two workers race for a task), and keep-alive
// expiry is decided from the clock under the lock at every state change, so
// it does not depend on which timer goroutine happens to run first.
//
// Create it inside the simulation's bubble: its timers and channels belong to
// the bubble that creates them.
type Executor struct {
	cfg ExecutorConfig

	// mu guards the fields below. It is only held for bookkeeping and for
	// sends that cannot block, never across BeforeTask or a task.
	mu     sync.Mutex
	queue  taskQueue
	idle   []*worker // LIFO: the most recently idled worker is on top
	pool   int       // workers counted by the pool rules (excludes dismissed ones still exiting)
	live   int       // worker goroutines not yet exited; Shutdown waits for 0
	active int
	peak   int
	nextID int
	shut   bool
	done   chan struct{} // closed once shut and live == 0
	counts struct{ completed, callerRuns, submitted, rejected, panics int64 }
}

type task struct {
	label string
	ctx   context.Context // what BeforeTask is told the task was submitted with
	fn    func()          // nil: the worker must exit (retired or shut down)
}

type worker struct {
	id int // creation order, for tests and debugging

	// handoff carries the worker's next task while it is idle. Only the
	// goroutine that removes the worker from the idle stack (under mu) sends,
	// once, and the worker drains it before going idle again, so with one
	// slot the send never blocks.
	handoff chan task
	timer   *time.Timer // keep-alive; owned by the worker goroutine

	// Set under mu when the worker goes idle; read by others under mu.
	timed    bool
	deadline time.Time
}

// NewExecutor returns a running Executor. It panics on sizes that
// ThreadPoolExecutor would reject (a programming error; Config.validate
// reports them as errors first).
func NewExecutor(cfg ExecutorConfig) *Executor {
	cfg = cfg.normalised()
	return &Executor{cfg: cfg, done: make(chan struct{})}
}

func (c ExecutorConfig) normalised() ExecutorConfig {
	if c.Core == 0 && c.Max == 0 {
		c.Core, c.Max = DefaultExecutorCore, DefaultExecutorMax
		if c.Queue == 0 {
			c.Queue = DefaultExecutorQueue
		}
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultExecutorKeepAlive
	}
	if c.Core < 0 || c.Max < 1 || c.Core > c.Max || c.Queue < 0 || c.KeepAlive < 0 {
		panic(fmt.Sprintf("system: bad ExecutorConfig core=%d max=%d queue=%d keep-alive=%v",
			c.Core, c.Max, c.Queue, c.KeepAlive))
	}
	return c
}

type placement int

const (
	placed      placement = iota // handed to an idle worker or queued
	startWorker                  // run on a new worker
	callerRuns                   // run by the submitting goroutine
)

// Submit runs fn on the pool. It never blocks, except on caller-runs, when
// the caller itself runs BeforeTask and the task before Submit returns.
// After Shutdown the task is not run and is counted as Rejected.
// Submit panics if task is nil.
func (e *Executor) Submit(label string, fn func()) {
	e.SubmitContext(context.Background(), label, fn)
}

// SubmitContext is Submit for a task done on behalf of ctx's operation:
// BeforeTask is given ctx (the task's own context, e.g. the message it
// works for: MessageOf). The executor neither cancels nor waits on it.
func (e *Executor) SubmitContext(ctx context.Context, label string, fn func()) {
	if fn == nil {
		panic("system: Executor.Submit(" + label + ") with a nil task")
	}
	t := task{label: label, ctx: ctx, fn: fn}
	e.mu.Lock()
	if e.shut {
		e.counts.rejected++
		e.mu.Unlock()
		e.probe(ProbeExecRejected)
		return
	}
	e.counts.submitted++
	retired := e.expireLocked(time.Now())
	idle := len(e.idle) > 0
	p, w, first := e.placeLocked(t)
	grew := p == startWorker && e.pool > e.cfg.Core && e.queue.len() >= e.cfg.Queue
	atMax := p == startWorker && e.pool == e.cfg.Max
	e.mu.Unlock()
	if e.cfg.OnSubmit != nil {
		e.cfg.OnSubmit(label, placementName(p, idle))
	}
	e.probedRetired(retired)
	switch {
	case p == placed && !idle:
		e.probe(ProbeExecQueued)
	case p == callerRuns:
		e.probe(ProbeExecCallerRuns)
	case grew:
		e.probe(ProbeExecGrewPastCore)
	}
	if atMax {
		e.probe(ProbeExecPoolAtMax)
	}
	switch p {
	case startWorker:
		go e.work(w, first)
	case callerRuns:
		e.run(t, true)
		e.mu.Lock()
		e.counts.completed++
		e.mu.Unlock()
	}
}

// probe tells the embedder the executor hit name.
func (e *Executor) probe(name string) {
	if e.cfg.Probe != nil {
		e.cfg.Probe(name)
	}
}

func placementName(p placement, idle bool) string {
	switch {
	case p == startWorker:
		return "worker"
	case p == callerRuns:
		return "caller"
	case idle:
		return "idle"
	}
	return "queue"
}

// placeLocked applies ThreadPoolExecutor.execute's rules, in its order. When
// it starts a worker it returns the worker and its first task.
func (e *Executor) placeLocked(t task) (placement, *worker, task) {
	switch {
	case e.pool < e.cfg.Core:
		return startWorker, e.newWorkerLocked(), t
	case len(e.idle) > 0:
		// An idle worker polling the queue takes the task at once.
		e.handOffLocked(e.popIdleLocked(), t)
	case e.queue.len() < e.cfg.Queue:
		e.queue.push(t)
		if e.pool == 0 {
			// Core 0 (or every worker lost): like Java's
			// addWorker(null), start a worker for the oldest task.
			first, _ := e.queue.pop()
			return startWorker, e.newWorkerLocked(), first
		}
	case e.pool < e.cfg.Max:
		return startWorker, e.newWorkerLocked(), t
	default:
		e.counts.callerRuns++
		return callerRuns, nil, task{}
	}
	return placed, nil, task{}
}

// newWorkerLocked counts a new worker that will start holding a task.
func (e *Executor) newWorkerLocked() *worker {
	e.nextID++
	e.pool++
	e.live++
	e.active++
	e.peak = max(e.peak, e.pool)
	return &worker{id: e.nextID, handoff: make(chan task, 1)}
}

func (e *Executor) popIdleLocked() *worker {
	n := len(e.idle) - 1
	w := e.idle[n]
	e.idle[n] = nil
	e.idle = e.idle[:n]
	return w
}

// handOffLocked gives a task to a worker just taken off the idle stack.
func (e *Executor) handOffLocked(w *worker, t task) {
	e.active++
	w.handoff <- t // cannot block: see worker.handoff
}

// dismissLocked tells a worker just taken off the idle stack to exit.
func (e *Executor) dismissLocked(w *worker) {
	e.pool--
	w.handoff <- task{} // cannot block: see worker.handoff
}

// expireLocked retires idle workers whose keep-alive has run out, oldest
// idle first, while the pool is above Core. A timed-out worker that is not
// needed to shrink the pool waits untimed from then on, as Java's getTask
// switches to take() once the pool is at core. Deciding this from the clock
// at every state change (not in whichever timer goroutine runs first) keeps
// the outcome independent of goroutine scheduling.
func (e *Executor) expireLocked(now time.Time) (retired bool) {
	kept := e.idle[:0]
	for _, w := range e.idle {
		if w.timed && !w.deadline.After(now) {
			w.timed = false
			if e.pool > e.cfg.Core {
				e.dismissLocked(w)
				retired = true
				continue
			}
		}
		kept = append(kept, w)
	}
	clear(e.idle[len(kept):])
	e.idle = kept
	return retired
}

// work is a worker goroutine: it runs its first task, then whatever next
// gives it, until told to exit.
func (e *Executor) work(w *worker, t task) {
	exited := false
	defer func() {
		if !exited {
			e.lost()
		}
	}()
	for ok := true; ok; t, ok = e.next(w) {
		e.run(t, false)
		if e.cfg.AfterTask != nil {
			// Before the worker looks at the queue again: a task that ended
			// because something woke it must not race a concurrent Submit.
			e.cfg.AfterTask(t.ctx, t.label)
		}
	}
	exited = true
}

// lost accounts for a worker whose task called runtime.Goexit (t.FailNow in
// a test, for instance), so that Shutdown still returns.
func (e *Executor) lost() {
	e.mu.Lock()
	e.active--
	e.pool--
	e.goneLocked()
	e.mu.Unlock()
}

// next records the task the worker finished and returns its next one: the
// oldest queued task, or one handed over while idle. false means exit.
func (e *Executor) next(w *worker) (task, bool) {
	e.mu.Lock()
	e.active--
	e.counts.completed++
	now := time.Now()
	// A retirement is told after the lock is let go, before anything
	// that may block.
	retired := e.expireLocked(now)
	if t, ok := e.queue.pop(); ok {
		e.active++
		e.mu.Unlock()
		e.probedRetired(retired)
		return t, true
	}
	if e.shut {
		e.pool--
		e.goneLocked()
		e.mu.Unlock()
		e.probedRetired(retired)
		return task{}, false
	}
	// Java decides once, when the worker starts waiting, whether it waits
	// with a timeout (pool above core) or indefinitely.
	w.timed = e.pool > e.cfg.Core
	w.deadline = now.Add(e.cfg.KeepAlive)
	timed := w.timed
	e.idle = append(e.idle, w)
	e.mu.Unlock()
	e.probedRetired(retired)
	return e.await(w, timed)
}

func (e *Executor) probedRetired(retired bool) {
	if retired {
		e.probe(ProbeExecWorkerRetired)
	}
}

// await blocks an idle worker until it is handed a task or told to exit.
// Its timer only makes sure expiry is evaluated at the deadline; the
// decision itself is expireLocked's, and arrives through the hand-off.
func (e *Executor) await(w *worker, timed bool) (task, bool) {
	if timed {
		if w.timer == nil {
			w.timer = time.NewTimer(e.cfg.KeepAlive)
		} else {
			w.timer.Reset(e.cfg.KeepAlive)
		}
		select {
		case t := <-w.handoff:
			w.timer.Stop()
			return e.received(t)
		case <-w.timer.C:
			e.mu.Lock()
			retired := e.expireLocked(time.Now())
			e.mu.Unlock()
			e.probedRetired(retired)
		}
	}
	return e.received(<-w.handoff)
}

func (e *Executor) received(t task) (task, bool) {
	if t.fn != nil {
		return t, true
	}
	e.mu.Lock()
	e.goneLocked()
	e.mu.Unlock()
	return task{}, false
}

// goneLocked records that a worker goroutine is exiting.
func (e *Executor) goneLocked() {
	e.live--
	if e.shut && e.live == 0 {
		close(e.done)
	}
}

// run runs BeforeTask and the task, containing a panic so that a worker is
// never lost to one. caller: the submitting goroutine runs it (caller-runs).
func (e *Executor) run(t task, caller bool) {
	defer e.recoverTask(t.label)
	if e.cfg.BeforeTask != nil {
		e.cfg.BeforeTask(t.ctx, t.label, caller)
	}
	t.fn()
}

func (e *Executor) recoverTask(label string) {
	r := recover()
	if r == nil {
		return
	}
	e.mu.Lock()
	e.counts.panics++
	e.mu.Unlock()
	if e.cfg.OnPanic != nil {
		e.cfg.OnPanic(label, r)
	}
}

// Shutdown stops accepting tasks, lets running and queued tasks finish, and
// returns once every worker goroutine has exited. Tasks running on callers
// (caller-runs) are not waited for. It is safe to call more than once, but
// not from inside a task: it would wait for itself.
func (e *Executor) Shutdown() {
	e.mu.Lock()
	if !e.shut {
		e.shut = true
		// Idle workers imply an empty queue: they have nothing left to do.
		for len(e.idle) > 0 {
			e.dismissLocked(e.popIdleLocked())
		}
		if e.live == 0 {
			close(e.done)
		}
	}
	e.mu.Unlock()
	<-e.done
}

// Stats returns a snapshot. It has no side effects: in particular it does
// not apply keep-alive expiry, which stays driven by the workers' own timers
// and by Submit and next, so an observer cannot hide a worker that failed to
// retire.
func (e *Executor) Stats() ExecutorStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return ExecutorStats{
		Core: e.cfg.Core, Max: e.cfg.Max,
		Pool: e.pool, Active: e.active, Queued: e.queue.len(), Peak: e.peak,
		Completed: e.counts.completed, CallerRuns: e.counts.callerRuns,
		Submitted: e.counts.submitted, Rejected: e.counts.rejected, Panics: e.counts.panics,
	}
}

// taskQueue is a FIFO ring that grows on demand, so a large configured
// capacity costs nothing until it is used.
type taskQueue struct {
	buf  []task
	head int
	n    int
}

func (q *taskQueue) len() int { return q.n }

func (q *taskQueue) push(t task) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = t
	q.n++
}

func (q *taskQueue) pop() (task, bool) {
	if q.n == 0 {
		return task{}, false
	}
	t := q.buf[q.head]
	q.buf[q.head] = task{} // let the closure be collected
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return t, true
}

func (q *taskQueue) grow() {
	buf := make([]task, max(16, 2*len(q.buf)))
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}

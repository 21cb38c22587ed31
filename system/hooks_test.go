package system

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTaskGatesTellCallerRunsFromWorkers: a task on a worker passes
// PointTask before it runs and PointTaskDone after; a task the submitter
// runs itself because the pool is saturated passes PointTaskCaller and no
// PointTaskDone. An embedder counting tasks on workers from the gates
// (PointTask released minus PointTaskDone reached) never counts it.
func TestTaskGatesTellCallerRunsFromWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One worker and no queue: the second task of a fan-out runs in the
		// Send handler while the first holds the worker.
		c := newCluster(t, ModeBulk, 1, withConfig(func(cfg *Config) {
			cfg.Executor = ExecutorConfig{Core: 1, Max: 1, Queue: 0}
		}))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n1")
		alice.join("r")
		bob.join("r")

		release := c.rec.hold("n1", PointTask)
		alice.send("r", "m1", "x") // returns: the caller-runs task did not wait for the worker's
		c.settle()
		worker := c.rec.gatesOf("n1", PointTask)
		caller := c.rec.gatesOf("n1", PointTaskCaller)
		require.Len(t, worker, 1, "one task on the worker")
		require.Len(t, caller, 1, "one task run by the sender")
		assert.Equal(t, "deliver r#1 alice", worker[0].Key)
		assert.Equal(t, "deliver r#1 bob", caller[0].Key)
		assert.Equal(t, []uint64{1}, bob.seqs("r"), "the caller-runs delivery is done")
		assert.Empty(t, alice.seqs("r"), "the worker's delivery is parked at its gate")
		assert.Equal(t, int64(1), c.node("n1").Metrics().Executor.CallerRuns)

		release()
		c.settle()
		assert.Equal(t, []uint64{1}, alice.seqs("r"))
		done := c.rec.gatesOf("n1", PointTaskDone)
		require.Len(t, done, 1, "only the worker reaches PointTaskDone")
		assert.Equal(t, "deliver r#1 alice", done[0].Key)
	})
}

// TestTaskPanicIsLoggedAndObserved: a task that panics does not take the
// node down; the node logs the panic (in production too: Logf defaults to
// log.Printf) and reports it as a PanicEvent.
func TestTaskPanicIsLoggedAndObserved(t *testing.T) {
	assert.NotNil(t, Config{}.withDefaults().Logf, "nodes log by default")
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var logged []string
		c := newCluster(t, ModeBulk, 1, withConfig(func(cfg *Config) {
			cfg.Logf = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, fmt.Sprintf(format, args...))
			}
		}))
		n1 := c.node("n1")
		n1.submit(n1.ctx, "boom task", func(context.Context) { panic("boom") })
		c.settle()

		assert.Equal(t, []PanicEvent{{Node: "n1", Label: "boom task", Value: "boom"}}, eventsOf[PanicEvent](c.rec))
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, logged, 1)
		assert.Contains(t, logged[0], `relay node n1: task "boom task" panicked (recovered): boom`)
		assert.Contains(t, logged[0], "goroutine", "with the stack")
		assert.Equal(t, int64(1), n1.Metrics().Executor.Panics)
	})
}

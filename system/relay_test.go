package system

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// redisTap is a go-redis hook that can fail commands and logs the ones it
// sees into a shared log.
type redisTap struct {
	fail func(cmd redis.Cmder) error // nil: pass
	log  func(cmd redis.Cmder)
}

func (r *redisTap) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *redisTap) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r.log != nil {
			r.log(cmd)
		}
		if r.fail != nil {
			if err := r.fail(cmd); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}
func (r *redisTap) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// isLookup reports a registry read of node (Directory.LookupNode).
func isLookup(cmd redis.Cmder, node string) bool {
	args := cmd.Args()
	return cmd.Name() == "hgetall" && len(args) == 2 && args[1] == keyNode(node)
}

// TestRelayRetriesRegistryErrors: a Redis error while looking the peer up is
// transient like a transport error: the relay is retried, and the message
// still arrives live.
func TestRelayRetriesRegistryErrors(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		var mu sync.Mutex
		failed := false
		tap := &redisTap{fail: func(cmd redis.Cmder) error {
			mu.Lock()
			defer mu.Unlock()
			if !failed && isLookup(cmd, "n2") {
				failed = true
				return errors.New("connection reset by peer")
			}
			return nil
		}}
		c := newCluster(t, mode, 2, withDeps(func(id string, d *Deps) {
			if id == "n1" {
				d.RedisHooks = append(d.RedisHooks, tap)
			}
		}))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")

		alice.send("r", "m1", "x")
		c.settle()
		time.Sleep(time.Second) // virtual: the retry's back-off
		c.settle()

		evs := c.rec.relaysTo("n1", "n2")
		require.Len(t, evs, 2, "one failed attempt, one retry: %v", evs)
		assert.Equal(t, codes.Unavailable, status.Code(evs[0].Err), "a registry error is transient: %v", evs[0].Err)
		assert.Equal(t, 2, evs[1].Attempt)
		assert.NoError(t, evs[1].Err)
		ds := bob.deliveries()
		require.Len(t, ds, 1)
		assert.False(t, ds[0].FromLog, "seq 1 arrives live, not from a later catch-up")
	})
}

// relayTimeline records, in order and with their virtual time, a node's
// relay attempts, registry reads of one peer and finished tasks.
type relayTimeline struct {
	Hooks
	mu  sync.Mutex
	t0  time.Time
	log []string
}

func (r *relayTimeline) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf("%v ", time.Since(r.t0))+fmt.Sprintf(format, args...))
}

func (r *relayTimeline) Gate(ctx context.Context, p Point) {
	if p.Kind == PointTaskDone {
		r.add("done %s", p.Key)
	}
	r.Hooks.Gate(ctx, p)
}

func (r *relayTimeline) Observe(e any) {
	if ev, ok := e.(RelayEvent); ok {
		r.add("relay %s#%d attempt %d failed=%t", ev.Room, ev.Seq, ev.Attempt, ev.Err != nil)
	}
	r.Hooks.Observe(e)
}

func (r *relayTimeline) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// TestRelayGivesUpAtOnceAfterLastAttempt: a relay's last failed attempt
// ends its task there: no registry read, no back-off holding the worker.
func TestRelayGivesUpAtOnceAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl := &relayTimeline{}
		c := newCluster(t, ModeBulk, 2,
			withConfig(func(cfg *Config) {
				cfg.RelayAttempts = 2
				cfg.RelayBackoff = 100 * time.Millisecond
			}),
			withDeps(func(id string, d *Deps) {
				if id == "n1" {
					tl.Hooks = d.Hooks
					d.Hooks = tl
					d.RedisHooks = append(d.RedisHooks, &redisTap{log: func(cmd redis.Cmder) {
						if isLookup(cmd, "n2") {
							tl.add("lookup n2")
						}
					}})
				}
			}))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		c.node("n2").Kill() // still registered: relays to it fail

		tl.mu.Lock()
		tl.t0, tl.log = time.Now(), nil
		tl.mu.Unlock()
		alice.send("r", "m1", "x")
		time.Sleep(10 * time.Second) // virtual: every retry has run
		c.settle()

		lines := tl.lines()
		last := -1
		for i, l := range lines {
			if strings.HasSuffix(l, " relay r#1 attempt 2 failed=true") {
				last = i
			}
		}
		require.NotEqual(t, -1, last, "the relay made its last attempt: %q", lines)
		require.Less(t, last+1, len(lines), "%q", lines)
		at, _, _ := strings.Cut(lines[last], " ")
		assert.Equal(t, at+" done bulk r#1 ->n2", lines[last+1],
			"the task ends when its last attempt fails: %q", lines)
	})
}

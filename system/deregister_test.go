package system

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// overlapTap starts a new incarnation of node the moment the old one's
// deregistration has run its first Redis command: an overlapping restart
// (the new process registers while the old one is still stopping).
type overlapTap struct {
	node  string
	start func()
	once  sync.Once
}

func (o *overlapTap) DialHook(next redis.DialHook) redis.DialHook { return next }
func (o *overlapTap) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if Label(ctx) == "stop "+o.node {
			o.once.Do(o.start)
		}
		return err
	}
}
func (o *overlapTap) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestDeregisterSparesANewerIncarnation: a stopping node removes its
// registry entry only if the entry is still its own, atomically: a new
// incarnation that registered in the middle of the old one's stop keeps
// its entry, and peers relay to it at once.
func TestDeregisterSparesANewerIncarnation(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := map[bool]string{false: "fixed", true: "legacy read-then-delete"}[legacy]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var c *testCluster
				var next *Node
				tap := &overlapTap{node: "n2", start: func() { next = c.startNode("n2") }}
				c = newCluster(t, ModeBulk, 2,
					withConfig(func(cfg *Config) { cfg.Legacy.Deregister = legacy }),
					withDeps(func(id string, d *Deps) {
						if id == "n2" {
							d.RedisHooks = append(d.RedisHooks, tap)
						}
					}))
				c.createRoom("r")
				alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
				alice.join("r")
				bob.join("r")
				old := c.node("n2")

				old.Stop(context.Background())
				require.NotNil(t, next, "the new incarnation started during the stop")
				c.settle()

				info, err := c.node("n1").Directory().LookupNode(context.Background(), "n2")
				if legacy {
					assert.ErrorIs(t, err, ErrUnknownNode, "the old rule deletes the newer entry")
					return
				}
				require.NoError(t, err, "the newer incarnation is still registered")
				assert.Equal(t, next.Epoch(), info.Epoch)
				assert.Greater(t, next.Epoch(), old.Epoch())

				bob.connect("n2", nil)
				alice.send("r", "m1", "x")
				c.settle()
				require.Equal(t, []uint64{1}, bob.seqs("r"))
				assert.False(t, bob.deliveries()[0].FromLog, "relayed live to the new incarnation")
			})
		})
	}
}

// TestHeartbeatOfASupersededIncarnation: during an overlapping restart
// under one node id, the old incarnation is still alive after the new
// one registered. Its heartbeat must not put its older epoch back over
// the new entry (and its compare-and-delete deregister then remove it):
// it stops heartbeating, and the new incarnation stays registered.
func TestHeartbeatOfASupersededIncarnation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		old := c.node("n1")
		next := c.startNode("n1") // registers while the old one still runs
		require.Greater(t, next.Epoch(), old.Epoch())
		dir := next.Directory()
		ctx := context.Background()

		err := dir.Heartbeat(ctx, NodeInfo{ID: "n1", Addr: "n1", Epoch: old.Epoch(), Protocol: ProtocolLatest}, 30*time.Second)
		assert.ErrorIs(t, err, ErrSuperseded, "the older incarnation's heartbeat is refused")
		info, err := dir.LookupNode(ctx, "n1")
		require.NoError(t, err)
		assert.Equal(t, next.Epoch(), info.Epoch, "the entry still names the new incarnation")

		// Its refresh loop stops heartbeating and says so; its stop
		// spares the new entry.
		time.Sleep(11 * time.Second)
		c.settle()
		old.Stop(ctx)
		info, err = dir.LookupNode(ctx, "n1")
		require.NoError(t, err, "the new incarnation is still registered")
		assert.Equal(t, next.Epoch(), info.Epoch)

		// After a rewind (Redis restored from an older snapshot) the
		// stored epoch and the counter are older than the live node's:
		// it still heartbeats, and the counter is moved past it so the
		// next incarnation gets a newer epoch than the live one.
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), next.Epoch()-1, 0).Err())
		require.NoError(t, c.rdb.HSet(ctx, keyNode("n1"), "epoch", next.Epoch()-1).Err())
		require.NoError(t, dir.Heartbeat(ctx, NodeInfo{ID: "n1", Addr: "n1", Epoch: next.Epoch(), Protocol: ProtocolLatest}, 30*time.Second))
		info, err = dir.LookupNode(ctx, "n1")
		require.NoError(t, err)
		assert.Equal(t, next.Epoch(), info.Epoch)
		issued, err := c.rdb.Get(ctx, keyEpoch("n1")).Uint64()
		require.NoError(t, err)
		assert.Equal(t, next.Epoch(), issued)
	})
}

// TestOldIncarnationKeepsTheNewRoute: during an overlapping restart under
// one node id, a user reconnects to the new incarnation, whose session
// counter starts again: its session there has the same number its old
// session had on the old incarnation. When the old incarnation stops and
// closes that session, its compare-and-delete of the route must not
// match the new incarnation's route (the route names the incarnation).
func TestOldIncarnationKeepsTheNewRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2)
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		old := c.node("n2")

		next := c.startNode("n2") // overlapping: the old one still serves
		// bob's second device (its first stays on the old incarnation):
		// session #1 of the new incarnation, as bob's is on the old.
		bob2 := &testUser{c: c, name: "bob"}
		bob2.connect("n2", nil)
		defer bob2.disconnect()
		c.settle()
		require.Greater(t, next.Epoch(), old.Epoch())

		old.Stop(context.Background())
		c.settle()
		route, err := c.node("n1").Directory().Route(context.Background(), "bob")
		require.NoError(t, err)
		assert.Equal(t, "n2", route, "the old incarnation's stop dropped the new session's route")

		alice.send("r", "m1", "x")
		c.settle()
		assert.Equal(t, []uint64{1}, bob2.seqs("r"))
	})
}

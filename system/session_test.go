package system

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestLiveGapFillWaitsForOutboxRoom: a reconnect's replay streams at the
// client's pace and may leave the outbox nearly full. A live message that
// arrives then with a gap before it fills the gap at the client's pace too:
// the client is healthy, its session must not end as too slow, and it gets
// everything once, in order.
func TestLiveGapFillWaitsForOutboxRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1, withConfig(func(cfg *Config) { cfg.OutboxSize = 4 }))
		c.createRoom("r")
		bob := c.connect("bob", "n1")
		bob.join("r")
		bob.disconnect()
		// The node ends the old session before bob reconnects: else the
		// reconnect may find it still registered and replace it (Aborted),
		// which is not what this test is about (seen once under load).
		c.settle()
		for _, id := range []string{"m1", "m2", "m3", "m4"} {
			c.appendOnly("r", "bob", id)
		}

		// Bob reconnects while his stream is slow to write: the pump holds
		// seq 1 and the replay leaves 2..4 in the outbox, one slot free.
		release := c.rec.hold("n1", PointSessionSend)
		bob.connect("n1", nil)
		c.settle()
		require.Empty(t, bob.seqs("r"))

		// Seqs 5 and 6 were never relayed; 7 arrives live.
		c.appendOnly("r", "bob", "m5")
		c.appendOnly("r", "bob", "m6")
		relayed := make(chan error, 1)
		go func() {
			relayed <- c.relay("n1", testToken, func(ctx context.Context, cl relaypb.RelayClient) error {
				_, err := cl.RelayMessage(ctx, &relaypb.RelayMessageRequest{
					Message:   &relaypb.RelayedMessage{Room: "r", Seq: 7, MsgId: "m7", Sender: "alice", Payload: []byte("m7")},
					Recipient: "bob",
				})
				return err
			})
		}()
		c.settle()
		assert.Equal(t, 1, c.node("n1").Metrics().Sessions, "bob's session is still registered")

		release() // the client reads on
		c.settle()
		require.NoError(t, <-relayed)
		c.settle()
		assert.NoError(t, bob.streamErr(), "a client reading at its pace is not too slow")
		assert.Equal(t, seqRange(1, 7), bob.seqs("r"))
		ds := bob.deliveries()
		require.Len(t, ds, 7)
		assert.False(t, ds[6].FromLog, "seq 7 is the live delivery")
		var closed []string
		for _, e := range eventsOf[SessionEvent](c.rec) {
			if !e.Open {
				closed = append(closed, e.Reason)
			}
		}
		assert.Equal(t, []string{"rpc error: code = Canceled desc = stream ended"}, closed,
			"only the session bob disconnected himself ended")
	})
}

// lrangeSizes is a go-redis hook that records the length of every LRANGE
// reply.
type lrangeSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (h *lrangeSizes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lrangeSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *lrangeSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if sc, ok := cmd.(*redis.StringSliceCmd); ok && cmd.Name() == "lrange" {
			h.mu.Lock()
			h.sizes = append(h.sizes, len(sc.Val()))
			h.mu.Unlock()
		}
		return err
	}
}

// TestReplayReadsTheLogAPageAtATime: a client with a long history
// replays it a page at a time (Config.ReplayPage), never the whole
// backlog in one read held for the whole replay; it still gets every
// entry once, in order.
func TestReplayReadsTheLogAPageAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reads := &lrangeSizes{}
		c := newCluster(t, ModeBulk, 1,
			withConfig(func(cfg *Config) { cfg.OutboxSize, cfg.ReplayPage = 4, 8 }),
			withDeps(func(_ string, d *Deps) { d.RedisHooks = append(d.RedisHooks, reads) }))
		c.createRoom("r")
		bob := c.connect("bob", "n1")
		bob.join("r")
		bob.disconnect()
		for i := 1; i <= 50; i++ {
			c.appendOnly("r", "bob", fmt.Sprintf("m%d", i))
		}
		bob.connect("n1", nil)
		c.settle()
		assert.Equal(t, seqRange(1, 50), bob.seqs("r"))
		reads.mu.Lock()
		defer reads.mu.Unlock()
		require.NotEmpty(t, reads.sizes)
		assert.LessOrEqual(t, slices.Max(reads.sizes), 8, "no read of the log holds more than a page")
	})
}

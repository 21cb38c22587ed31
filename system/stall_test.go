package system

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestStalledClientCostsOthersNothing: bob's app hangs with his connection
// up while his replay is longer than his outbox. His replay must not park
// the pool's workers (nor, through caller-runs, a sender's Send) on his
// session: carol, who shares no room with him, gets her message at once
// and alice's sends return at once. After SlowClientAfter without a
// delivery taken, bob's session ends as too slow, and when he reads again
// and reconnects he gets everything, once, in order.
func TestStalledClientCostsOthersNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1, withConfig(func(cfg *Config) {
			cfg.OutboxSize = 2
			cfg.Executor = ExecutorConfig{Core: 1, Max: 1, Queue: 1}
			cfg.SlowClientAfter = 5 * time.Second
		}))
		c.createRoom("r")
		c.createRoom("q")
		alice, carol := c.connect("alice", "n1"), c.connect("carol", "n1")
		alice.join("r")
		alice.join("q")
		carol.join("q")
		bob := c.connect("bob", "n1")
		bob.join("r")
		bob.disconnect()
		for _, id := range []string{"m1", "m2", "m3", "m4", "m5", "m6"} {
			c.appendOnly("r", "alice", id)
		}

		// Bob's app stops reading: his pump holds seq 1, his outbox fills,
		// and his replay waits for room.
		release := c.rec.holdKey("n1", PointSessionSend, "bob #")
		defer release()
		bob.connect("n1", nil)

		sent := make(chan error, 4)
		go func() {
			for _, id := range []string{"a1", "a2", "a3"} {
				_, err := alice.trySend("r", id, id)
				sent <- err
			}
			_, err := alice.trySend("q", "a4", "a4")
			sent <- err
		}()
		time.Sleep(time.Second)
		require.Len(t, sent, 4, "alice's sends returned within a second")
		for range 4 {
			require.NoError(t, <-sent)
		}
		assert.Equal(t, []uint64{1}, carol.seqs("q"), "carol got her message at once")

		// SlowClientAfter later, bob's session ends as too slow.
		time.Sleep(5 * time.Second)
		c.settle()
		release()
		c.settle()
		assert.Equal(t, codes.ResourceExhausted, status.Code(bob.streamErr()), "bob's session ended as too slow")
		bob.connect("n1", nil)
		c.settle()
		assert.Equal(t, seqRange(1, 9), bob.seqs("r"), "bob resumed from his cursor")
	})
}

// TestLivePushAfterReplayWaitsForReader: a replay that streams a backlog
// at the client's pace leaves the outbox full; the next live message (the
// next seq, no gap) must not end the session of a client that reads on:
// its push waits (at most LiveLockWait) for the client to make room.
func TestLivePushAfterReplayWaitsForReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1, withConfig(func(cfg *Config) { cfg.OutboxSize = 3 }))
		c.createRoom("r")
		bob := c.connect("bob", "n1")
		bob.join("r")
		bob.disconnect()
		for _, id := range []string{"m1", "m2", "m3", "m4"} {
			c.appendOnly("r", "bob", id)
		}
		// The pump holds seq 1 while the replay puts 2..4 in the outbox:
		// the replay ends with the outbox full.
		release := c.rec.holdKey("n1", PointSessionSend, "bob #")
		bob.connect("n1", nil)
		c.settle()
		seq := c.appendOnly("r", "bob", "m5")
		relayed := make(chan error, 1)
		go func() {
			relayed <- c.relay("n1", testToken, func(ctx context.Context, cl relaypb.RelayClient) error {
				_, err := cl.RelayMessage(ctx, &relaypb.RelayMessageRequest{
					Message:   &relaypb.RelayedMessage{Room: "r", Seq: seq, MsgId: "m5", Sender: "bob", Payload: []byte("m5")},
					Recipient: "bob",
				})
				return err
			})
		}()
		c.settle()
		require.NoError(t, <-relayed)
		time.Sleep(100 * time.Millisecond) // the client reads on, a little later
		release()
		c.settle()
		assert.NoError(t, bob.streamErr(), "a client reading at its pace is not too slow")
		assert.Equal(t, seqRange(1, 5), bob.seqs("r"))
	})
}

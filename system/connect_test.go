package system

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestReplayLongerThanTheOutbox: a client that reconnects after missing
// more messages than its outbox holds still gets them all, in order, on one
// stream — replay waits for the stream instead of declaring the client slow.
func TestReplayLongerThanTheOutbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2, withConfig(func(cfg *Config) { cfg.OutboxSize = 4 }))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		alice.send("r", "m0", "x")
		c.settle()
		bob.disconnect()
		for i := 1; i <= 50; i++ {
			alice.send("r", fmt.Sprintf("m%d", i), "x")
			c.settle() // alice reads as fast as she sends
		}

		bob.connect("n1", nil) // cursor 1
		c.settle()

		assert.Equal(t, seqRange(1, 51), bob.seqs("r"))
		assert.NoError(t, bob.streamErr(), "the stream stays open")
		assert.Equal(t, 2, c.node("n1").Metrics().Sessions)
	})
}

// TestConnectReplacesAnOlderSession: a second Connect of the same user on
// the same node ends the first stream (Aborted) and keeps the route.
func TestConnectReplacesAnOlderSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2)
		c.createRoom("r")
		alice := c.connect("alice", "n1")
		alice.join("r")
		// A second client of alice's (another device) connects to n1.
		second := c.user("alice-second-client")
		second.name = "alice"
		second.connect("n1", nil)
		c.settle()

		assert.Equal(t, codes.Aborted, status.Code(alice.streamErr()), "the older stream is ended")
		m := c.node("n1").Metrics()
		assert.Equal(t, 1, m.Sessions)
		assert.Equal(t, 1, m.OpenStreams)
		route, err := c.node("n2").Directory().Route(context.Background(), "alice")
		require.NoError(t, err)
		assert.Equal(t, "n1", route, "the newer session keeps the route")

		bob := c.connect("bob", "n2")
		bob.join("r")
		bob.send("r", "m1", "x")
		c.settle()
		assert.Equal(t, []uint64{1}, second.seqs("r"))
		assert.Empty(t, alice.seqs("r"))
	})
}

// TestConnectFailsCleanlyWithoutRedis: a Connect that cannot route the user
// fails with Unavailable and leaves no session or stream behind.
func TestConnectFailsCleanlyWithoutRedis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		c.mr.SetError("LOADING redis is loading")
		alice := c.connect("alice", "n1")
		c.mr.SetError("")

		assert.Equal(t, codes.Unavailable, status.Code(alice.streamErr()))
		m := c.node("n1").Metrics()
		assert.Equal(t, 0, m.Sessions, "no session left registered")
		assert.Equal(t, 0, m.OpenStreams)
	})
}

// TestConnectRejectsBadUser: Connect validates its input like the unary calls.
func TestConnectRejectsBadUser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		err := c.chat("n1", func(cl relaypb.ChatClient) error {
			stream, err := cl.Connect(context.Background(), &relaypb.ConnectRequest{User: ""})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		})
		assert.Equal(t, codes.InvalidArgument, status.Code(err))
		assert.Equal(t, 0, c.node("n1").Metrics().OpenStreams)
	})
}

// TestDropRouteOfAnOlderSessionKeepsTheNewer: when a user reconnects to the
// same node, the old session's close may decide to drop the user's route
// before the new session registers and run after the new session set it.
// The route names the session that set it, so the old session removes only
// its own entry. (Found by timely live delivery on seed 0x9's calm variant:
// every relay to a user who had reconnected to the same node was skipped
// until the next route refresh, and only the 5 s catch-up delivered.)
func TestDropRouteOfAnOlderSessionKeepsTheNewer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		dir := c.node("n1").Directory()
		ctx := context.Background()
		require.NoError(t, dir.SetRoute(ctx, "alice", "n1", 1, 4, time.Minute))
		require.NoError(t, dir.SetRoute(ctx, "alice", "n1", 1, 6, time.Minute))
		require.NoError(t, dir.DropRoute(ctx, "alice", "n1", 1, 4))
		route, err := dir.Route(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, "n1", route, "the older session dropped the newer session's route")
		require.NoError(t, dir.DropRoute(ctx, "alice", "n1", 1, 6))
		route, err = dir.Route(ctx, "alice")
		require.NoError(t, err)
		assert.Empty(t, route)
	})
}

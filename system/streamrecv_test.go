package system

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestStreamItemCancelledBeforeDeliveryIsNotLost: a stream that is
// cancelled after the receiver read an item and before it delivered it
// (the sender's next write broke, its watchdog fired) must not cost the
// item: the receiver records an item as processed, and acknowledges it,
// so the sender's resend on the next stream is dropped as a duplicate;
// the delivery must therefore happen whatever became of the stream.
func TestStreamItemCancelledBeforeDeliveryIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 2)
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		require.Equal(t, uint64(1), c.appendOnly("r", "alice", "m1"))
		item := &relaypb.RelayStreamItem{
			Message:    &relaypb.RelayedMessage{Room: "r", Seq: 1, MsgId: "m1", Sender: "alice", Payload: []byte("m1"), Origin: "n1"},
			Recipients: []string{"bob"}, TargetEpoch: c.node("n2").Epoch(), Link: "n1@1.1#0", LinkSeq: 1,
		}
		cc := c.clientConn("n2", nil)
		defer cc.Close()
		open := func() (relaypb.Relay_RelayStreamClient, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			ctx = metadataWithToken(ctx)
			s, err := relaypb.NewRelayClient(cc).RelayStream(ctx)
			require.NoError(t, err)
			return s, cancel
		}

		// The item is read, and its delivery parks at bob's session lock.
		release := c.rec.hold("n2", PointSessionLock)
		s, cancel := open()
		require.NoError(t, s.Send(item))
		c.settle()
		require.NotEmpty(t, c.rec.gatesOf("n2", PointSessionLock), "the delivery is under way")
		// The stream breaks before the delivery goes on.
		cancel()
		c.settle()
		release()
		c.settle()

		// The sender writes the unacknowledged item again on a new stream.
		s, cancel = open()
		defer cancel()
		require.NoError(t, s.Send(item))
		ack, err := s.CloseAndRecv()
		require.NoError(t, err)
		assert.Equal(t, uint64(1), ack.Acked)
		c.settle()

		require.Equal(t, []uint64{1}, bob.seqs("r"), "delivered once, by one stream or the other")
		assert.False(t, bob.deliveries()[0].FromLog, "live, not left to the catch-up")
	})
}

// metadataWithToken adds the cluster credential to ctx.
func metadataWithToken(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MDToken, testToken)
}

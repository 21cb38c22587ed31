package system

import (
	"context"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// withProtocols gives node nK the K-th protocol version.
func withProtocols(versions ...int) clusterOpt {
	return withConfig(func(cfg *Config) {
		var i int
		_, _ = fmt.Sscanf(cfg.NodeID, "n%d", &i)
		cfg.Protocol = versions[i-1]
	})
}

// modesTo returns the modes of node's relay attempts to target, in order.
func (r *recorder) modesTo(node, target string) []Mode {
	var out []Mode
	for _, e := range r.relaysTo(node, target) {
		out = append(out, e.Mode)
	}
	return out
}

// TestMixedVersionsRelayInTheBestCommonMode: in a stream-mode cluster where
// n1 speaks v3, n2 v1 and n3 v2, each pair relays in the best mode both ends
// speak, and every member receives every message once, in order.
func TestMixedVersionsRelayInTheBestCommonMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 3, withProtocols(3, 1, 2))
		c.createRoom("r")
		users := []*testUser{c.connect("alice", "n1"), c.connect("bob", "n2"), c.connect("carol", "n3")}
		for _, u := range users {
			u.join("r")
		}
		for i, u := range users {
			u.send("r", fmt.Sprintf("m%d", i), "x")
			c.settle()
		}
		for _, u := range users {
			assert.Equal(t, seqRange(1, 3), u.seqs("r"), "%s: every message once, in order", u.name)
		}
		assert.Equal(t, []Mode{ModeSingle}, c.rec.modesTo("n1", "n2"), "v3 to v1: single")
		assert.Equal(t, []Mode{ModeBulk}, c.rec.modesTo("n1", "n3"), "v3 to v2: bulk")
		assert.Equal(t, []Mode{ModeSingle}, c.rec.modesTo("n2", "n1"), "a v1 node relays in single mode whatever its config says")
		assert.Equal(t, []Mode{ModeBulk}, c.rec.modesTo("n3", "n1"), "v2 to v3: bulk")
		assert.Equal(t, ModeSingle, c.node("n2").Mode())
		assert.Equal(t, ModeBulk, c.node("n3").Mode())
		assert.Equal(t, ModeStream, c.node("n1").Mode())
	})
}

// TestUnimplementedFallsBackAndIsRemembered: a peer whose registry entry
// claims v3 but which speaks v1 answers Unimplemented to the stream and to
// the bulk call; the sender falls back to single relays without losing or
// duplicating the message, and remembers it for that incarnation.
func TestUnimplementedFallsBackAndIsRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 2, withProtocols(3, 1))
		n2 := c.node("n2")
		require.NoError(t, c.rdb.HSet(context.Background(), keyNode("n2"), "protocol", 3).Err())
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")

		alice.send("r", "m1", "x")
		// The refusal may come back only with the ack, once the stream
		// has lingered.
		time.Sleep(time.Second)
		c.settle()
		assert.Equal(t, []uint64{1}, bob.seqs("r"))
		assert.False(t, bob.deliveries()[0].FromLog, "delivered live, by the fallback")
		var whats []string
		for _, e := range eventsOf[StreamEvent](c.rec) {
			whats = append(whats, e.What)
		}
		assert.Equal(t, []string{"open", "broken", "fallback"}, whats)
		assert.Equal(t, []Mode{ModeStream, ModeBulk, ModeSingle}, c.rec.modesTo("n1", "n2"))

		alice.send("r", "m2", "x")
		c.settle()
		assert.Equal(t, seqRange(1, 2), bob.seqs("r"))
		assert.Equal(t, []Mode{ModeStream, ModeBulk, ModeSingle, ModeSingle}, c.rec.modesTo("n1", "n2"), "remembered: straight to single")
		assert.Equal(t, n2.Epoch(), c.node("n2").Epoch())
	})
}

// TestStreamResendIsDeduplicated: a sender whose stream broke writes its
// unacknowledged items again on a new stream; the receiver processes only
// the new ones and acknowledges cumulatively.
func TestStreamResendIsDeduplicated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 2)
		c.createRoom("r")
		bob := c.connect("bob", "n2")
		bob.join("r")
		for i := 1; i <= 5; i++ {
			c.appendOnly("r", "bob", fmt.Sprintf("m%d", i))
		}
		item := func(seq uint64) *relaypb.RelayStreamItem {
			return &relaypb.RelayStreamItem{
				Message:    &relaypb.RelayedMessage{Room: "r", Seq: seq, MsgId: fmt.Sprintf("m%d", seq), Sender: "alice", Payload: []byte("x")},
				Recipients: []string{"bob"}, Link: "n9@1.1#0", LinkSeq: seq,
			}
		}
		stream := func(seqs ...uint64) *relaypb.RelayStreamAck {
			var ack *relaypb.RelayStreamAck
			err := c.relay("n2", testToken, func(ctx context.Context, cl relaypb.RelayClient) error {
				s, err := cl.RelayStream(ctx)
				if err != nil {
					return err
				}
				for _, q := range seqs {
					if err := s.Send(item(q)); err != nil && err != io.EOF {
						return err
					}
				}
				ack, err = s.CloseAndRecv()
				return err
			})
			require.NoError(t, err)
			c.settle()
			return ack
		}
		a := stream(1, 2, 3)
		assert.Equal(t, uint64(3), a.Acked)
		b := stream(2, 3, 4, 5)
		assert.Equal(t, uint64(5), b.Acked, "acknowledged cumulatively")
		assert.Equal(t, uint32(2), b.Duplicates)
		assert.Equal(t, uint32(2), b.Processed)
		assert.Equal(t, seqRange(1, 5), bob.seqs("r"), "each once, in order")
		old := stream(6)
		assert.Equal(t, uint64(6), old.Acked)

		// An older incarnation of the sender is never new once a newer one
		// was seen.
		claim := func(l linkSeen, seq uint64) claimed {
			v, _ := c.node("n2").claim(linkKey{"n9", "0"}, l, seq)
			return v
		}
		require.Equal(t, claimNew, claim(linkSeen{epoch: 1, gen: 2}, 1), "a new link generation starts again at 1")
		assert.Equal(t, claimStale, claim(linkSeen{epoch: 1, gen: 1}, 7), "an older generation")
		require.Equal(t, claimNew, claim(linkSeen{epoch: 2, gen: 1}, 1), "a new incarnation")
		assert.Equal(t, claimStale, claim(linkSeen{epoch: 1, gen: 3}, 9), "an older incarnation")
		assert.Equal(t, claimDuplicate, claim(linkSeen{epoch: 2, gen: 1}, 1), "a resend")
		_, _, err := parseLink("n9@1#0")
		assert.Equal(t, codes.InvalidArgument, status.Code(err))
	})
}

// TestOlderProtocolsAnswerUnimplemented: a v1 node has no bulk or stream
// relay, a v2 node no stream.
func TestOlderProtocolsAnswerUnimplemented(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeSingle, 2, withProtocols(1, 2))
		m := &relaypb.RelayedMessage{Room: "r", Seq: 1, MsgId: "m", Sender: "a", Payload: []byte("x")}
		err := c.relay("n1", testToken, func(ctx context.Context, cl relaypb.RelayClient) error {
			_, err := cl.RelayBulkMessage(ctx, &relaypb.RelayBulkMessageRequest{Message: m, Recipients: []string{"b"}})
			return err
		})
		assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
		for _, node := range []string{"n1", "n2"} {
			err = c.relay(node, testToken, func(ctx context.Context, cl relaypb.RelayClient) error {
				s, err := cl.RelayStream(ctx)
				if err != nil {
					return err
				}
				_ = s.Send(&relaypb.RelayStreamItem{Message: m, Recipients: []string{"b"}, Link: "n9@1.1#0", LinkSeq: 1})
				_, err = s.CloseAndRecv()
				return err
			})
			assert.Equal(t, codes.Unimplemented, status.Code(err), "%s: %v", node, err)
		}
		_, err = ParseProtocol("v4")
		assert.ErrorContains(t, err, "want v1, v2 or v3")
		_, err = New(Config{NodeID: "x", Advertise: "x", ClusterToken: "t", Protocol: 7}, Deps{Listener: c.lis["n1"], Redis: c.redisOptions()})
		assert.ErrorContains(t, err, "unknown relay protocol v7")
	})
}

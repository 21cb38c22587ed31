package system

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestMessageIDIsScopedToItsSender: a client message id belongs to its
// sender. Another member's send with the same id is that member's own new
// message; a non-member's send is refused whatever its id; and a genuine
// retry (same sender, same id) is answered, and fanned out again, with the
// original log entry, never with the retry's content.
func TestMessageIDIsScopedToItsSender(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 2)
		c.createRoom("r")
		alice, mallory := c.connect("alice", "n1"), c.connect("mallory", "n1")
		carol := c.connect("carol", "n1")
		bob := c.connect("bob", "n2")
		for _, u := range []*testUser{alice, mallory, bob} {
			u.join("r")
		}
		// Seq 1 is sequenced but its fan-out was lost (its node died
		// after the ack): nobody has it yet.
		require.Equal(t, uint64(1), c.appendOnly("r", "alice", "m1"))

		// A non-member reusing the id is refused and changes nothing.
		before := c.mr.Dump()
		_, err := carol.trySend("r", "m1", "forged by carol")
		c.settle()
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
		assert.Equal(t, before, c.mr.Dump(), "a refused send changes nothing")
		assert.Empty(t, bob.seqs("r"), "nothing is fanned out for a refused send")

		// Another member reusing the id sends a message of their own.
		resp := mallory.send("r", "m1", "mallory's own")
		c.settle()
		assert.False(t, resp.Duplicate, "another sender's id is never a duplicate")
		assert.Equal(t, uint64(2), resp.Seq)
		assert.Equal(t, int64(2), c.logLen("r"))

		// The sender's own retry, with other content, is a duplicate of seq
		// 1 and re-delivers what the log holds.
		resp = alice.send("r", "m1", "changed on retry")
		c.settle()
		assert.True(t, resp.Duplicate)
		assert.Equal(t, uint64(1), resp.Seq)
		assert.Equal(t, int64(2), c.logLen("r"), "a retry appends nothing")

		entries, err := c.node("n1").Directory().Log(t.Context(), "r", 1, 0)
		require.NoError(t, err)
		for _, u := range []*testUser{bob, alice} {
			ds := u.deliveries()
			require.Len(t, ds, 2, "%s", u.name)
			for i, d := range ds {
				e := entries[d.Seq-1]
				assert.Equal(t, uint64(i+1), d.Seq, "%s", u.name)
				assert.Equal(t, e.Sender, d.Sender, "%s: sender of #%d is the log's", u.name, d.Seq)
				assert.Equal(t, e.MsgID, d.MsgId, "%s: id of #%d is the log's", u.name, d.Seq)
				assert.Equal(t, string(e.Payload), string(d.Payload), "%s: payload of #%d is the log's", u.name, d.Seq)
			}
		}
		assert.Equal(t, "m1", string(entries[0].Payload))
		assert.Equal(t, "mallory", entries[1].Sender)
	})
}

// TestIdempotencyAcrossARollingUpgrade: during an upgrade, nodes with
// Legacy.Idempotency (the old rule) and fixed nodes share one Redis. Every
// node writes both idempotency keys, so a sender's retry is recognised
// whichever kind of node sequenced the first try; a legacy node still
// applies the old rule to what it reads.
func TestIdempotencyAcrossARollingUpgrade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2, withConfig(func(cfg *Config) { cfg.Legacy.Idempotency = cfg.NodeID == "n1" }))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		send := func(node, user, id, payload string) (*relaypb.SendResponse, error) {
			var resp *relaypb.SendResponse
			err := c.chat(node, func(cl relaypb.ChatClient) error {
				var err error
				resp, err = cl.Send(context.Background(), &relaypb.SendRequest{Room: "r", User: user, ClientMsgId: id, Payload: []byte(payload)})
				return err
			})
			c.settle()
			return resp, err
		}
		for _, try := range []struct{ first, retry string }{{"n1", "n2"}, {"n2", "n1"}} {
			id := "from-" + try.first
			first, err := send(try.first, "alice", id, "x")
			require.NoError(t, err)
			retry, err := send(try.retry, "alice", id, "x")
			require.NoError(t, err)
			assert.True(t, retry.Duplicate, "first on %s, retried on %s", try.first, try.retry)
			assert.Equal(t, first.Seq, retry.Seq)
		}
		assert.Equal(t, int64(2), c.logLen("r"))

		// The old rule, kept by the legacy node: a non-member reusing an
		// id is a duplicate and its content is fanned out.
		resp, err := send("n1", "carol", "from-n2", "forged")
		require.NoError(t, err)
		assert.True(t, resp.Duplicate)
		_, err = send("n2", "carol", "from-n2", "forged")
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), "the fixed node refuses it")
		assert.Equal(t, seqRange(1, 2), bob.seqs("r"))
	})
}

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

// inEveryMode runs test in its own bubble once per relay mode.
func inEveryMode(t *testing.T, test func(t *testing.T, mode Mode)) {
	for _, mode := range Modes {
		t.Run(string(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { test(t, mode) })
		})
	}
}

// relayTo pushes seq of room to user on node as a peer would, bypassing
// sequencing and fan-out.
func (c *testCluster) relayTo(node, user, room string, seq uint64) {
	c.t.Helper()
	err := c.relay(node, testToken, func(ctx context.Context, cl relaypb.RelayClient) error {
		_, err := cl.RelayMessage(ctx, &relaypb.RelayMessageRequest{
			Message:   &relaypb.RelayedMessage{Room: room, Seq: seq, MsgId: "relayed", Sender: "x", Payload: []byte("p")},
			Recipient: user,
		})
		return err
	})
	require.NoError(c.t, err)
	c.settle()
}

// appendOnly sequences a message into room's log without fanning it out, as
// if its sender's node had died right after the ack.
func (c *testCluster) appendOnly(room, sender, msgID string) uint64 {
	c.t.Helper()
	sq, err := c.node("n1").Directory().Append(context.Background(), room, msgID, sender, []byte(msgID))
	require.NoError(c.t, err)
	return sq.Seq
}

func TestSendIsIdempotent(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 2)
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")

		first := alice.send("r", "m1", "hi")
		retry := alice.send("r", "m1", "hi")
		c.settle()

		assert.Equal(t, uint64(1), first.Seq)
		assert.False(t, first.Duplicate)
		assert.Equal(t, first.Seq, retry.Seq, "a retry gets the same seq")
		assert.True(t, retry.Duplicate)
		assert.Equal(t, int64(1), c.logLen("r"), "a retry appends nothing")
		assert.Equal(t, []uint64{1}, bob.seqs("r"), "the retry's fan-out is deduplicated")
		assert.Equal(t, []uint64{1}, alice.seqs("r"))
	})
}

func TestSessionFillsGapsAndDropsDuplicates(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 2)
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		alice.send("r", "m1", "one")
		c.settle()
		require.Equal(t, []uint64{1}, bob.seqs("r"))

		// Seqs 2 and 3 are in the log but were never relayed.
		c.appendOnly("r", "alice", "m2")
		c.appendOnly("r", "alice", "m3")
		c.relayTo("n2", "bob", "r", 3)

		ds := bob.deliveries()
		require.Len(t, ds, 3)
		assert.Equal(t, []uint64{1, 2, 3}, bob.seqs("r"), "the gap is filled before seq 3")
		assert.True(t, ds[1].FromLog, "seq 2 comes from the log")
		assert.Equal(t, "m2", ds[1].MsgId)
		assert.False(t, ds[2].FromLog, "seq 3 is the live delivery")

		c.relayTo("n2", "bob", "r", 3)
		c.relayTo("n2", "bob", "r", 2)
		assert.Equal(t, []uint64{1, 2, 3}, bob.seqs("r"), "duplicates are dropped")
	})
}

func TestMembershipWindows(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 3)
		c.createRoom("r")
		alice, late, leaver := c.connect("alice", "n1"), c.connect("late", "n2"), c.connect("leaver", "n3")
		alice.join("r")
		leaver.join("r")
		for i := 1; i <= 5; i++ {
			alice.send("r", msgID(i), "before")
		}
		c.settle()

		assert.Equal(t, uint64(6), late.join("r"), "a joiner's window starts after the current seq")
		// A stale relay and a retried send of an old message reach nobody
		// outside its window, even before anything inside it arrived.
		alice.send("r", msgID(1), "before")
		c.relayTo("n2", "late", "r", 3)
		assert.Empty(t, late.seqs("r"))

		alice.send("r", msgID(6), "after join")
		alice.send("r", msgID(7), "after join")
		c.settle()
		assert.Equal(t, uint64(7), leaver.leave("r"), "a leaver's window ends at the current seq")
		alice.send("r", msgID(8), "after leave")
		alice.send("r", msgID(9), "after leave")
		c.settle()

		c.relayTo("n3", "leaver", "r", 9)

		assert.Equal(t, seqRange(6, 9), late.seqs("r"), "a late joiner never receives 1..5")
		assert.Equal(t, seqRange(1, 7), leaver.seqs("r"), "nothing after leave")
		assert.Equal(t, seqRange(1, 9), alice.seqs("r"))

		// Reconnecting replays nothing outside the windows either.
		late.disconnect()
		leaver.disconnect()
		late.connect("n3", nil)
		leaver.connect("n1", nil)
		c.settle()
		assert.Equal(t, seqRange(6, 9), late.seqs("r"))
		assert.Equal(t, seqRange(1, 7), leaver.seqs("r"))
	})
}

func msgID(i int) string { return "m" + string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// TestRetryAfterLeavingGetsItsSeq: a send whose reply was lost is retried
// after its sender left the room (from another device, say). The message
// was sequenced: the retry is answered with its seq as a duplicate, not
// refused as from a non-member (which would tell the sender it was never
// sent). A non-member's first send is still refused.
func TestRetryAfterLeavingGetsItsSeq(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 2)
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")

		first := alice.send("r", "m1", "hi")
		alice.leave("r")
		retry, err := alice.trySend("r", "m1", "hi")
		require.NoError(t, err, "the retry of a sequenced message")
		assert.Equal(t, first.Seq, retry.Seq)
		assert.True(t, retry.Duplicate)
		_, err = alice.trySend("r", "m2", "new")
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), "a new message from a non-member")
		c.settle()
		assert.Equal(t, int64(1), c.logLen("r"))
		assert.Equal(t, []uint64{1}, bob.seqs("r"), "the retry's fan-out is deduplicated")
	})
}

package system

import (
	"cmp"
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamLinkAfterEpochRewind (issue 30, bug 5): a node restarted
// after Redis lost its last epoch increments (a restore from an older
// snapshot, a failover to a replica that missed them) registers with an
// epoch below one its peers have seen. Its links are then older than the
// newest its receivers know. The receiver, finding the registry naming
// the sender at the link's epoch, takes the link as the newest: its items
// are delivered live, and the link does not rewrite them forever.
func TestStreamLinkAfterEpochRewind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, alice, bob := rewoundCluster(t)
		alice.send("r", "m2", "x")
		alice.send("r", "m3", "x")
		time.Sleep(5 * time.Second) // virtual: every attempt has run
		c.settle()

		// m2 and m3 are dispatched by tasks of their own, which may
		// queue them on the link in either order; when m3 goes first it
		// fills m2's gap from the log. So m3 is live either way. Before
		// the fix neither was: both reached bob only with his catch-up.
		assert.Equal(t, seqRange(1, 3), bob.seqs("r"), "delivered")
		for _, d := range bob.deliveries() {
			if d.Seq == 3 {
				assert.False(t, d.FromLog, "%s#%d live", d.Room, d.Seq)
			}
		}
		opens := 0
		for _, e := range eventsOf[StreamEvent](c.rec) {
			if e.Node == "n1" && e.Target == "n2" && e.What == "open" {
				opens++
			}
		}
		assert.Less(t, opens, 5, "the link does not rewrite its items forever")
	})
}

// TestStaleLinkIsRefused: a link older than the newest seen whose epoch
// the registry does not name (an older incarnation, still stopping; or,
// here, a registry entry that moved on) is refused with INVALID_ARGUMENT
// "stale link epoch", and its sender relays its items in bulk.
func TestStaleLinkIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, alice, bob := rewoundCluster(t)
		require.NoError(t, c.rdb.HSet(context.Background(), keyNode("n1"), "epoch", 11).Err())
		alice.send("r", "m2", "x")
		alice.send("r", "m3", "x")
		time.Sleep(2 * time.Second) // virtual: the stream lingers and closes
		c.settle()

		// Delivered within 2 s, before the 5 s catch-up could: the
		// refused items' bulk relays are tasks of their own and may
		// arrive out of order, the later one filling the gap from the log
		// at once, so one of them at least is live.
		assert.Equal(t, seqRange(1, 3), bob.seqs("r"), "delivered")
		live := 0
		for _, d := range bob.deliveries() {
			if d.Seq >= 2 && !d.FromLog {
				live++
			}
		}
		assert.Positive(t, live, "the refused items were relayed, not left to the catch-up")
		isolated := 0
		for _, e := range eventsOf[StreamEvent](c.rec) {
			if e.Node == "n1" && e.What == "isolate" {
				isolated++
				assert.True(t, staleLink(e.Err), "%v", e.Err)
			}
		}
		assert.Positive(t, isolated, "the stale link's items were relayed in bulk")
	})
}

// rewoundCluster starts n1 (alice) and n2 (bob) in stream mode, has n2
// see n1's link at epoch 11, then restarts n1 with its epoch counter
// and registry entry rewound to 1 (Redis restored from an older
// snapshot): n1 runs at epoch 2.
func rewoundCluster(t *testing.T) (*testCluster, *testUser, *testUser) {
	c := newCluster(t, ModeStream, 2)
	alice, bob := c.roomOfTwo()
	ctx := context.Background()

	c.node("n1").Kill()
	c.settle()
	require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), 10, 0).Err())
	c.startNode("n1")
	alice.connect("n1", nil)
	alice.send("r", "m1", "x")
	time.Sleep(time.Second) // virtual: the stream lingers and closes
	c.settle()
	require.Equal(t, []uint64{1}, bob.seqs("r"))

	c.node("n1").Kill()
	c.settle()
	// A restore puts back a consistent older state: the epoch counter
	// and the registry entry it issued (the heartbeat refuses to write
	// over an entry naming a newer epoch than its own).
	require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), 1, 0).Err())
	require.NoError(t, c.rdb.HSet(ctx, keyNode("n1"), "epoch", 1).Err())
	c.startNode("n1")
	require.Equal(t, uint64(2), c.node("n1").Epoch(), "the epoch went backwards")
	alice.connect("n1", nil)
	return c, alice, bob
}

// TestEmptyAckIsAFailure: a receiver that closes a stream cleanly with
// none of its items acknowledged (an older node that skips the items of a
// stale link without refusing it) costs the writer an attempt.
func TestEmptyAckIsAFailure(t *testing.T) {
	rec := &probeRecorder{}
	n := &Node{cfg: Config{NodeID: "n1"}, deps: Deps{Probes: rec}}
	assert.NoError(t, n.emptyAck("l", 0, 0), "nothing written")
	assert.NoError(t, n.emptyAck("l", 3, 1), "a partial ack is progress")
	err := n.emptyAck("l", 3, 0)
	assert.ErrorIs(t, err, errNothingAcked)
	assert.True(t, retryable(err), "retried, then relayed in bulk")
	assert.True(t, staleLink(errStaleLink("n1@1.1#0", linkSeen{epoch: 2, gen: 1})))
	assert.False(t, staleLink(errNothingAcked))
	rec.expect(t, ProbeStreamEmptyAck)
}

// TestStreamLinkReusedByANewIncarnation: Redis lost the increment of a
// restarted node's epoch, so its next incarnation gets the same epoch and
// names its links as its predecessor did; their link seqs start again.
// The receiver tells the incarnations apart (MDIncarnation) and takes the
// new one's items as new: relayed, not acknowledged as duplicates.
func TestStreamLinkReusedByANewIncarnation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 2)
		alice, bob := c.roomOfTwo()
		for _, id := range []string{"m1", "m2", "m3"} {
			alice.send("r", id, "x")
		}
		time.Sleep(time.Second) // virtual: the stream lingers and closes
		c.settle()
		require.Equal(t, seqRange(1, 3), bob.seqs("r"))
		epoch := c.node("n1").Epoch()

		c.node("n1").Kill()
		c.settle()
		time.Sleep(time.Millisecond) // another process, started later
		require.NoError(t, c.rdb.Set(context.Background(), keyEpoch("n1"), epoch-1, 0).Err())
		c.startNode("n1")
		require.Equal(t, epoch, c.node("n1").Epoch(), "the same epoch again")
		alice.connect("n1", nil)
		alice.send("r", "m4", "x")
		alice.send("r", "m5", "x")
		time.Sleep(time.Second)
		c.settle()

		// Before, both were acknowledged as duplicates of m1 and m2 and
		// reached bob only with his next catch-up.
		assert.Equal(t, seqRange(1, 5), bob.seqs("r"), "delivered within the second")
	})
}

// TestPeerAtAReusedEpochIsTheNewProcess: Redis lost the increment of a
// restarted node's epoch, so its next process (upgraded from v1 to v3)
// is issued the epoch its predecessor had. Its peer's re-read of the
// registry must take the new process, not keep the dead one's entry for
// having the same epoch: before, n2 relayed to n1 in single mode (v1, the
// predecessor's version) for as long as the new process lived.
func TestPeerAtAReusedEpochIsTheNewProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		protocols := map[string]int{"n1": ProtocolV1, "n2": ProtocolLatest}
		c := newCluster(t, ModeStream, 2, withConfig(func(cfg *Config) { cfg.Protocol = protocols[cfg.NodeID] }))
		alice, bob := c.roomOfTwo()
		bob.send("r", "m1", "x")
		c.settle()
		require.Equal(t, []uint64{1}, alice.seqs("r"))
		require.Equal(t, []Mode{ModeSingle}, c.rec.modesTo("n2", "n1"), "n1 speaks v1")
		epoch := c.node("n1").Epoch()

		c.node("n1").Kill()
		c.settle()
		time.Sleep(time.Millisecond) // another process, started later
		ctx := context.Background()
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), epoch-1, 0).Err())
		require.NoError(t, c.rdb.HSet(ctx, keyNode("n1"), "epoch", epoch-1).Err())
		protocols["n1"] = ProtocolLatest
		c.startNode("n1")
		require.Equal(t, epoch, c.node("n1").Epoch(), "the same epoch again")
		alice.connect("n1", nil)

		// Past the peer's refresh interval, n2 reads n1's entry again.
		time.Sleep(time.Minute)
		bob.send("r", "m2", "x")
		time.Sleep(time.Second) // virtual: the stream lingers and closes
		c.settle()
		assert.Equal(t, seqRange(1, 2), alice.seqs("r"))
		assert.Equal(t, []Mode{ModeSingle, ModeStream}, c.rec.modesTo("n2", "n1"), "the new process speaks v3")
	})
}

// TestPeerAtALowerEpochIsTheNewProcess: the same, with the restarted
// node issued an epoch below its predecessor's (the restore went back
// past two increments). The stale-epoch refusal already handled it (the
// sender forgets the refused epoch and reads the registry again); this
// keeps it so with peers ordered by process: a relay to the dead epoch is
// refused, retried on the new process and delivered live.
func TestPeerAtALowerEpochIsTheNewProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2)
		alice, bob := c.roomOfTwo()
		ctx := context.Background()
		c.node("n1").Kill()
		c.settle()
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), 10, 0).Err())
		c.startNode("n1")
		alice.connect("n1", nil)
		bob.send("r", "m1", "x")
		c.settle()
		require.Equal(t, []uint64{1}, alice.seqs("r"))

		c.node("n1").Kill()
		c.settle()
		time.Sleep(time.Millisecond)
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), 1, 0).Err())
		require.NoError(t, c.rdb.HSet(ctx, keyNode("n1"), "epoch", 1).Err())
		c.startNode("n1")
		require.Equal(t, uint64(2), c.node("n1").Epoch(), "the epoch went backwards")
		alice.connect("n1", nil)
		bob.send("r", "m2", "x")
		time.Sleep(time.Second) // virtual: a retry's back-off, well under the catch-up's 5 s
		c.settle()
		assert.Equal(t, seqRange(1, 2), alice.seqs("r"))
		for _, d := range alice.deliveries() {
			assert.False(t, d.FromLog, "seq %d delivered live, not left to the catch-up", d.Seq)
		}
	})
}

// TestOlderProcessAtAHigherEpochStaysSuperseded: an older process of n1
// (L, epoch 11) lives on, cut off from its peers but not from Redis,
// while Redis is restored from a snapshot taken before L's epoch was
// issued, and a newer process N starts at epoch 2. Before, L's heartbeat
// took the registry back (its epoch is higher), N found itself
// superseded and stopped heartbeating, and L's stop then deleted the
// entry: peers found n1 unregistered and every relay to its users was
// left to the catch-up for as long as N lived. The later-started process
// holds the entry (the scripts compare incarnations when both name one).
func TestOlderProcessAtAHigherEpochStaysSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2)
		alice, bob := c.roomOfTwo()
		ctx := context.Background()
		a := c.node("n1")
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), 10, 0).Err())
		time.Sleep(time.Millisecond)
		older := c.startNode("n1") // L, overlapping A
		require.Equal(t, uint64(11), older.Epoch())
		a.Kill()
		c.settle()

		// The restore: the counter and the entry as they were at epoch 1.
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), 1, 0).Err())
		require.NoError(t, c.rdb.HSet(ctx, keyNode("n1"), "epoch", 1, "incarnation", a.incarnation).Err())
		time.Sleep(time.Millisecond)
		newer := c.startNode("n1") // N
		require.Equal(t, uint64(2), newer.Epoch())
		alice.connect("n1", nil)

		// Both heartbeat a few times; then L stops (its operator's restart
		// finally ends it).
		time.Sleep(time.Minute)
		c.settle()
		info, err := newer.Directory().LookupNode(ctx, "n1")
		require.NoError(t, err)
		assert.Equal(t, newer.incarnation, info.Incarnation, "the newer process holds the entry")
		older.Stop(ctx)
		c.settle()
		info, err = newer.Directory().LookupNode(ctx, "n1")
		require.NoError(t, err, "the older process's stop left the newer one's entry")
		assert.Equal(t, uint64(2), info.Epoch)

		// Past every peer's refresh, and off alice's catch-up ticks (every
		// 5 s from her connect, two minutes ago): a tick at the send's
		// instant may read m1 from the log before the relay brings it,
		// which is correct, but not what this test looks at.
		time.Sleep(time.Minute + 2*time.Second)
		bob.send("r", "m1", "x")
		time.Sleep(time.Second)
		c.settle()
		assert.Equal(t, []uint64{1}, alice.seqs("r"))
		for _, d := range alice.deliveries() {
			assert.False(t, d.FromLog, "seq %d delivered live, not left to the catch-up", d.Seq)
		}
	})
}

// roomOfTwo creates room r with alice on n1 and bob on n2 as members.
func (c *testCluster) roomOfTwo() (alice, bob *testUser) {
	c.createRoom("r")
	alice, bob = c.connect("alice", "n1"), c.connect("bob", "n2")
	alice.join("r")
	bob.join("r")
	return alice, bob
}

// TestIncarnationsOrderByStartTime: incarnations (start times in base 36)
// order as their times do, the way the heartbeat script orders them.
func TestIncarnationsOrderByStartTime(t *testing.T) {
	times := []int64{35, 36, 1_000_000, 1_764_000_000_000_000_000, 1_764_000_000_000_000_001}
	for _, a := range times {
		for _, b := range times {
			want := cmp.Compare(a, b)
			got := compareIncarnations(strconv.FormatInt(a, 36), strconv.FormatInt(b, 36))
			assert.Equal(t, want, got, "%d vs %d", a, b)
		}
	}
	assert.Zero(t, compareIncarnations("", "abc"), "an entry without one is ordered by epoch")
}

// TestStopOfAnOlderProcessAtTheSameEpochSparesTheEntry: Redis lost the
// increment, so a newer process of n1 was issued the epoch the older one,
// still running, holds. The newer one's heartbeat takes the entry; the
// older one's stop must not delete it for naming the same epoch.
func TestStopOfAnOlderProcessAtTheSameEpochSparesTheEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		ctx := context.Background()
		older := c.node("n1")
		require.NoError(t, c.rdb.Set(ctx, keyEpoch("n1"), older.Epoch()-1, 0).Err())
		time.Sleep(time.Millisecond)
		newer := c.startNode("n1")
		require.Equal(t, older.Epoch(), newer.Epoch(), "the same epoch again")
		older.Stop(ctx)
		c.settle()
		info, err := newer.Directory().LookupNode(ctx, "n1")
		require.NoError(t, err, "the older process's stop left the newer one's entry")
		assert.Equal(t, newer.incarnation, info.Incarnation)
	})
}

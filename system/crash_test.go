package system

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// relaysTo returns the relay events from node to target, in order.
func (r *recorder) relaysTo(node, target string) []RelayEvent {
	var out []RelayEvent
	for _, e := range r.relays() {
		if e.Node == node && e.Target == target {
			out = append(out, e)
		}
	}
	return out
}

// TestCrashAndRestart: a killed node loses its sessions; relays to it fail
// while the senders carry on; a node restarted under the same id registers a
// new epoch, and its peers reach it again after re-reading the registry.
func TestCrashAndRestart(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 3)
		c.createRoom("r")
		alice, bob, carol := c.connect("alice", "n1"), c.connect("bob", "n2"), c.connect("carol", "n3")
		for _, u := range []*testUser{alice, bob, carol} {
			u.join("r")
		}
		alice.send("r", "m1", "x")
		c.settle()
		require.Equal(t, []uint64{1}, carol.seqs("r"))
		oldEpoch := c.node("n3").Epoch()

		// Crash n3.
		c.node("n3").Kill()
		c.settle()
		assert.Equal(t, codes.Unavailable, status.Code(carol.streamErr()), "carol's stream breaks")
		m := c.node("n3").Metrics()
		assert.Equal(t, 0, m.Sessions, "the crashed node's sessions are gone")
		assert.Equal(t, 0, m.OpenStreams)

		// The sender keeps going; relays to n3 fail and are given up.
		before := len(c.rec.relaysTo("n1", "n3"))
		assert.Equal(t, uint64(2), alice.send("r", "m2", "x").Seq)
		assert.Equal(t, uint64(3), alice.send("r", "m3", "x").Seq)
		time.Sleep(10 * time.Second) // virtual: every retry has run
		c.settle()
		assert.Equal(t, seqRange(1, 3), bob.seqs("r"))
		failed := c.rec.relaysTo("n1", "n3")[before:]
		require.NotEmpty(t, failed, "n1 tried to relay to the dead node")
		if mode == ModeStream {
			// Queuing on the link succeeds; its stream breaks and the
			// items are given up.
			whats := map[string]int{}
			for _, e := range eventsOf[StreamEvent](c.rec) {
				if e.Target == "n3" {
					whats[e.What]++
				}
			}
			assert.Positive(t, whats["broken"], "the stream to the dead node breaks")
			assert.Positive(t, whats["drop"], "its items are given up")
		} else {
			for _, e := range failed {
				assert.Error(t, e.Err, "relay to a dead node fails")
			}
		}

		// Restart n3: new epoch; carol reconnects with her cursor.
		n3 := c.startNode("n3")
		assert.Equal(t, oldEpoch+1, n3.Epoch())
		carol.disconnect()
		carol.connect("n3", nil)
		c.settle()
		assert.Equal(t, seqRange(1, 3), carol.seqs("r"), "carol catches up from the log")

		// n1 reaches the new incarnation again, live.
		before = len(c.rec.relaysTo("n1", "n3"))
		alice.send("r", "m4", "x")
		time.Sleep(10 * time.Second)
		c.settle()
		assert.Equal(t, seqRange(1, 4), carol.seqs("r"))
		ds := carol.deliveries()
		assert.False(t, ds[len(ds)-1].FromLog, "seq 4 arrives by relay, not from the log")
		after := c.rec.relaysTo("n1", "n3")[before:]
		require.NotEmpty(t, after)
		assert.NoError(t, after[len(after)-1].Err, "the last relay attempt to the new n3 succeeds")
		for _, e := range after {
			t.Logf("relay n1->n3 seq %d attempt %d: %v", e.Seq, e.Attempt, e.Err)
		}
	})
}

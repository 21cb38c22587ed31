package system

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ackLoser makes a node process every relay stream's items but fail to
// send its ack: the sender's CloseAndRecv fails with Unavailable.
func ackLoser(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !strings.HasSuffix(info.FullMethod, "/RelayStream") {
		return h(srv, ss)
	}
	return h(srv, ackLost{ss})
}

type ackLost struct{ grpc.ServerStream }

func (ackLost) SendMsg(any) error { return status.Error(codes.Unavailable, "ack lost") }

// ackFailingCluster is a stream-mode cluster whose n2 never acknowledges,
// with alice on n1 and bob on n2 in room r.
func ackFailingCluster(t *testing.T, cfg func(*Config)) (*testCluster, *testUser) {
	c := newCluster(t, ModeStream, 2,
		withConfig(func(c *Config) {
			c.RelayAttempts = 3
			c.RelayBackoff = 100 * time.Millisecond
			if cfg != nil {
				cfg(c)
			}
		}),
		withDeps(func(id string, d *Deps) {
			if id == "n2" {
				d.ServerOptions = append(d.ServerOptions, grpc.ChainStreamInterceptor(ackLoser))
			}
		}))
	c.createRoom("r")
	alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
	alice.join("r")
	bob.join("r")
	return c, alice
}

// streamEvents lists the link events of What from node.
func streamEvents(c *testCluster, node, what string) []StreamEvent {
	var out []StreamEvent
	for _, e := range eventsOf[StreamEvent](c.rec) {
		if e.Node == node && e.What == what {
			out = append(out, e)
		}
	}
	return out
}

// TestStreamLinkGivesUpWhenAcksKeepFailing: a step that only wrote is no
// progress. A link whose every ack fails counts each failure toward
// RelayAttempts and gives up (drops what it holds to the catch-up) rather
// than holding, and rewriting on every new stream, all it was ever given.
func TestStreamLinkGivesUpWhenAcksKeepFailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, alice := ackFailingCluster(t, nil)
		for i := 1; i <= 60; i++ {
			alice.send("r", fmt.Sprintf("m%d", i), "x")
			time.Sleep(50 * time.Millisecond) // virtual: 3 s of traffic
		}
		c.settle()

		assert.NotEmpty(t, streamEvents(c, "n1", "drop"), "the link gave up after %d failed acks", 3)
		most := 0
		for _, e := range streamEvents(c, "n1", "open") {
			most = max(most, e.Items)
		}
		assert.Less(t, most, 40, "a new stream rewrites only what the link held since it last gave up")
	})
}

// TestStreamLinkBacklogIsBounded: queued plus unacknowledged items of a
// link never exceed Config.StreamBacklog, however many messages are sent
// while the peer does not acknowledge; a relay over the bound is dropped
// at once (not retried), its recipients owed through the catch-up.
func TestStreamLinkBacklogIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = 8
		c, alice := ackFailingCluster(t, func(cfg *Config) {
			cfg.StreamBacklog = bound
			cfg.StreamLinger = 5 * time.Second // acks are rare: the backlog builds up
		})
		n1 := c.node("n1")
		require.Equal(t, bound, n1.Config().StreamBacklog)
		require.Equal(t, 4096, DefaultConfig().StreamBacklog)
		for i := 1; i <= 30; i++ {
			alice.send("r", fmt.Sprintf("m%d", i), "x")
			c.settle()
			assert.LessOrEqual(t, n1.Metrics().LinkBacklog, bound, "after send %d", i)
		}
		for _, e := range streamEvents(c, "n1", "open") {
			assert.LessOrEqual(t, e.Items, bound, "a stream rewrites at most the bound")
		}
		full := 0
		for _, e := range c.rec.relaysTo("n1", "n2") {
			if e.Err != nil {
				assert.Equal(t, codes.ResourceExhausted, status.Code(e.Err), "%v", e.Err)
				assert.Equal(t, 1, e.Attempt, "not retried: %v", e.Err)
				full++
			}
		}
		assert.Equal(t, 30-bound, full, "every relay over the bound is refused")
	})
}

// TestStreamLinkFullBacklogClosesForItsAck: a link whose stream holds
// StreamBacklog items closes it for the ack at once, as a full batch
// does. A link that waited for the linger instead would refuse every
// relay meanwhile (its backlog is at the bound), and with StreamBacklog
// below StreamBatch each batch would cost the linger and the refused
// relays' recipients a catch-up.
func TestStreamLinkFullBacklogClosesForItsAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 2, withConfig(func(cfg *Config) {
			cfg.StreamBacklog = 2
			cfg.StreamLinger = 5 * time.Second
		}))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		start := time.Now()
		for i := 1; i <= 6; i++ {
			alice.send("r", fmt.Sprintf("m%d", i), "x")
			c.settle()
		}
		for _, e := range c.rec.relaysTo("n1", "n2") {
			assert.NoError(t, e.Err, "no relay refused for a full backlog")
		}
		assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, bob.seqs("r"))
		assert.Less(t, time.Since(start), 5*time.Second, "delivered without waiting for a linger")
		for _, d := range bob.deliveries() {
			assert.False(t, d.FromLog, "seq %d delivered live", d.Seq)
		}
	})
}

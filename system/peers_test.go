package system

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestClosedPeerOffersNoConnection: a relay may still hold a peer that
// another relay has just replaced (and closed). Picking one of its
// channels while it closes is not a data race (run with -race), a closed
// peer offers no connection instead of dividing by zero, and a relay attempt
// on it fails with a retryable Unavailable.
func TestClosedPeerOffersNoConnection(t *testing.T) {
	for _, channels := range []int{1, 3} {
		t.Run(fmt.Sprint(channels, " channels"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, ModeBulk, 2, withConfig(func(cfg *Config) { cfg.ChannelsPerPeer = channels }))
				n1 := c.node("n1")
				ctx := context.Background()
				old, err := n1.peers.get(ctx, "n2")
				require.NoError(t, err)

				// A newer incarnation is installed (closing old) while a
				// relay that already holds old picks its channels.
				var wg sync.WaitGroup
				wg.Go(func() {
					_, err := n1.peers.install(NodeInfo{ID: "n2", Addr: "n2", Epoch: old.epoch + 1})
					assert.NoError(t, err)
				})
				assert.NotPanics(t, func() {
					for seq := range uint64(50) {
						_ = old.conn("r", seq, "bob")
					}
				})
				wg.Wait()
				assert.NotPanics(t, func() {
					assert.Nil(t, old.conn("r", 1, "bob"), "a closed peer has no connection to offer")
				})

				// A relay attempt that picked the closed peer (planted back
				// as the entry, as if it had been read just before the
				// replacement) fails retryably.
				n1.peers.mu.Lock()
				current := n1.peers.m["n2"]
				n1.peers.m["n2"] = old
				n1.peers.mu.Unlock()
				m := &relaypb.RelayedMessage{Room: "r", Seq: 1, MsgId: "m1", Sender: "alice", Payload: []byte("x")}
				assert.NotPanics(t, func() {
					_, _, err = n1.relayOnce(ctx, "n2", []string{"bob"}, m, ModeBulk, 1)
				})
				n1.peers.mu.Lock()
				n1.peers.m["n2"] = current // for the node to close at the end
				n1.peers.mu.Unlock()
				assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
				assert.True(t, retryable(err))
			})
		})
	}
}

// relayGate parks a node's incoming relays of one seq while armed.
type relayGate struct {
	mu      sync.Mutex
	seq     uint64
	open    chan struct{}
	waiting int
}

func (g *relayGate) arm(seq uint64) (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq, g.open = seq, make(chan struct{})
	ch := g.open
	return func() {
		g.mu.Lock()
		g.open = nil
		g.mu.Unlock()
		close(ch)
	}
}

func (g *relayGate) parked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

func (g *relayGate) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	var seq uint64
	switch r := req.(type) {
	case *relaypb.RelayMessageRequest:
		seq = r.GetMessage().GetSeq()
	case *relaypb.RelayBulkMessageRequest:
		seq = r.GetMessage().GetSeq()
	}
	g.mu.Lock()
	open := g.open
	if open != nil && seq == g.seq {
		g.waiting++
	} else {
		open = nil
	}
	g.mu.Unlock()
	if open != nil {
		select {
		case <-open:
		case <-ctx.Done():
		}
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}
	return h(ctx, req)
}

// staleHold parks the sender's reaction to the first relay that failed with
// FailedPrecondition (its RelayEvent is observed just before the relay
// reacts) while armed.
type staleHold struct {
	Hooks
	mu      sync.Mutex
	hold    chan struct{}
	reached bool
}

func (h *staleHold) arm() (release func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	h.hold = ch
	h.mu.Unlock()
	return func() { close(ch) }
}

func (h *staleHold) wasReached() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reached
}

func (h *staleHold) Observe(e any) {
	h.Hooks.Observe(e)
	if ev, ok := e.(RelayEvent); ok && status.Code(ev.Err) == codes.FailedPrecondition {
		h.mu.Lock()
		ch := h.hold
		h.hold = nil
		h.reached = h.reached || ch != nil
		h.mu.Unlock()
		if ch != nil {
			<-ch
		}
	}
}

// TestStaleEpochFailureKeepsNewerConnections: a relay that reached an old
// incarnation of a peer (FailedPrecondition) forgets that incarnation only.
// If another relay has meanwhile installed connections to the new
// incarnation, they stay, and a relay in flight on them is not cut.
func TestStaleEpochFailureKeepsNewerConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &relayGate{}
		var stale *staleHold
		c := newCluster(t, ModeBulk, 2, withDeps(func(id string, d *Deps) {
			switch id {
			case "n1":
				stale = &staleHold{Hooks: d.Hooks}
				d.Hooks = stale
			case "n2":
				d.ServerOptions = append(d.ServerOptions, grpc.ChainUnaryInterceptor(gate.intercept))
			}
		}))
		c.createRoom("r")
		// n2 restarts: epoch 1 is now a stale incarnation.
		c.node("n2").Kill()
		require.Equal(t, uint64(2), c.startNode("n2").Epoch())
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		n1 := c.node("n1")
		// n1 still holds connections to epoch 1, as if it had read the
		// registry before the restart.
		_, err := n1.peers.install(NodeInfo{ID: "n2", Addr: "n2", Epoch: 1})
		require.NoError(t, err)

		// Relay A (seq 1) goes to epoch 1 and fails; it is held before it
		// reacts.
		releaseA := stale.arm()
		alice.send("r", "m1", "x")
		c.settle()
		require.True(t, stale.wasReached(), "the relay of seq 1 reached the stale incarnation")

		// Meanwhile n1 installs epoch 2 and relay B (seq 2) is in flight on
		// its connections.
		current, err := n1.peers.install(NodeInfo{ID: "n2", Addr: "n2", Epoch: 2})
		require.NoError(t, err)
		releaseB := gate.arm(2)
		alice.send("r", "m2", "x")
		c.settle()
		require.Equal(t, 1, gate.parked(), "the relay of seq 2 is in flight at n2")

		releaseA() // A reacts to its stale failure
		c.settle()
		releaseB()
		time.Sleep(10 * time.Second) // virtual: every retry has run
		c.settle()

		var seq2 []RelayEvent
		for _, e := range c.rec.relaysTo("n1", "n2") {
			if e.Seq == 2 {
				seq2 = append(seq2, e)
			}
		}
		require.Len(t, seq2, 1, "seq 2 is relayed once: %v", seq2)
		assert.NoError(t, seq2[0].Err, "the relay in flight on epoch 2 is not cut")
		n1.peers.mu.Lock()
		entry := n1.peers.m["n2"]
		n1.peers.mu.Unlock()
		assert.Same(t, current, entry, "epoch 2's connections are kept")
		assert.Equal(t, []uint64{1, 2}, bob.seqs("r"))
	})
}

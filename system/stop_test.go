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
)

// TestStopIsGraceful: Stop closes every client stream, drops the node's
// routes and registry entry for good (even when it takes longer than a
// refresh period), closes its peer connections, and the rest of the cluster
// carries on.
func TestStopIsGraceful(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2)
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")
		bob.send("r", "m1", "x") // n2 now has a peer connection to n1
		c.settle()
		n2 := c.node("n2")
		require.Equal(t, 1, n2.Metrics().PeerConns)

		// Hold bob's session teardown so that Stop spends a few refresh
		// periods in GracefulStop.
		release := c.rec.hold("n2", PointSessionClose)
		stopped := make(chan struct{})
		go func() { n2.Stop(context.Background()); close(stopped) }()
		time.Sleep(DefaultConfig().RegistryTTL)
		release()
		<-stopped
		c.settle()

		assert.Equal(t, codes.Unavailable, status.Code(bob.streamErr()), "bob's stream is closed by the server")
		m := n2.Metrics()
		assert.Equal(t, 0, m.Sessions)
		assert.Equal(t, 0, m.OpenStreams)
		assert.Equal(t, 0, m.PeerConns)
		dir := c.node("n1").Directory()
		_, err := dir.LookupNode(context.Background(), "n2")
		assert.ErrorIs(t, err, ErrUnknownNode, "the stopped node is deregistered")
		route, err := dir.Route(context.Background(), "bob")
		require.NoError(t, err)
		assert.Empty(t, route, "bob's route is dropped")

		alice.send("r", "m2", "x")
		c.settle()
		assert.Equal(t, []uint64{1, 2}, alice.seqs("r"))
		assert.Equal(t, []uint64{1}, bob.seqs("r"))
	})
}

// TestStopIsBoundedByItsContext: a stream handler that does not finish
// cannot hold Stop past its context's deadline; the server is then stopped
// hard.
func TestStopIsBoundedByItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		alice := c.connect("alice", "n1")
		release := c.rec.hold("n1", PointSessionClose) // alice's handler never returns
		defer release()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		c.node("n1").Stop(ctx)
		took := time.Since(start)
		c.settle()

		assert.Equal(t, 5*time.Second, took)
		assert.Equal(t, codes.Unavailable, status.Code(alice.streamErr()))
	})
}

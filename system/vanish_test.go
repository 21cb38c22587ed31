package system

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vanishingConn is the client side of a connection whose client can vanish:
// from then on its writes are swallowed and its reads never return, like a
// laptop closed mid-session. Nothing is closed, so only the server's
// keep-alive can notice.
type vanishingConn struct {
	net.Conn
	gone      chan struct{}
	closed    chan struct{}
	vanishOne sync.Once
	closeOne  sync.Once
}

func newVanishingConn(c net.Conn) *vanishingConn {
	return &vanishingConn{Conn: c, gone: make(chan struct{}), closed: make(chan struct{})}
}

func (v *vanishingConn) vanish() { v.vanishOne.Do(func() { close(v.gone) }) }

func (v *vanishingConn) vanished() bool {
	select {
	case <-v.gone:
		return true
	default:
		return false
	}
}

func (v *vanishingConn) Read(b []byte) (int, error) {
	if !v.vanished() {
		n, err := v.Conn.Read(b)
		if !v.vanished() {
			return n, err
		}
	}
	<-v.closed // whatever arrives now is never seen
	return 0, net.ErrClosed
}

func (v *vanishingConn) Write(b []byte) (int, error) {
	if v.vanished() {
		return len(b), nil
	}
	return v.Conn.Write(b)
}

func (v *vanishingConn) Close() error {
	v.closeOne.Do(func() { close(v.closed) })
	return v.Conn.Close()
}

// TestVanishedClientIsDisconnectedByKeepAlive: a client that stops reading
// and never closes its stream has the stream closed by the server within
// StreamKeepAlive + StreamKeepAliveTimeout; its session, stream count and
// route go with it (seed grpc-stream-leaks-and-pools).
func TestVanishedClientIsDisconnectedByKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2)
		c.createRoom("r")
		bob := c.connect("bob", "n2")
		bob.join("r")
		var conn *vanishingConn
		alice := c.user("alice")
		alice.connect("n1", func(nc net.Conn) net.Conn { conn = newVanishingConn(nc); return conn })
		alice.join("r")
		n1 := c.node("n1")
		require.Equal(t, 1, n1.Metrics().OpenStreams)

		conn.vanish()
		start := time.Now()
		bound := DefaultConfig().StreamKeepAlive + DefaultConfig().StreamKeepAliveTimeout
		bob.send("r", "m1", "are you there?") // deliveries keep coming meanwhile
		for n1.Metrics().OpenStreams > 0 && time.Since(start) <= 2*bound {
			time.Sleep(100 * time.Millisecond)
			c.settle()
		}
		took := time.Since(start)

		assert.LessOrEqual(t, took, bound, "stream closed within the keep-alive bound")
		m := n1.Metrics()
		assert.Equal(t, 0, m.OpenStreams)
		assert.Equal(t, 0, m.Sessions)
		route, err := n1.Directory().Route(context.Background(), "alice")
		require.NoError(t, err)
		assert.Empty(t, route, "the route is dropped")
		t.Logf("vanished client's stream closed after %v (bound %v)", took, bound)
	})
}

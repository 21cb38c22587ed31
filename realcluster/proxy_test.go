package realcluster

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo serves loopback connections that echo every line back.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	_, err := c.Write([]byte(line + "\n"))
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, line+"\n", got)
}

// TestProxy: a link passes bytes; a cut holds them (nothing is lost: they
// arrive once it heals); a drop resets open connections and refuses new
// ones; a delay passes them; close ends every goroutine (TestMain checks).
func TestProxy(t *testing.T) {
	p, err := newProxy("n1", "n2", echo(t))
	require.NoError(t, err)
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "hello")

	p.set(linkCut, 0)
	_, err = c.Write([]byte("held\n"))
	require.NoError(t, err)
	p.set(linkPass, 0)
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "held\n", got, "a cut holds bytes, it does not lose them")

	p.set(linkDelay, 1)
	roundTrip(t, c, r, "slow")

	p.set(linkDrop, 0)
	_, err = r.ReadString('\n')
	assert.Error(t, err, "a drop resets the open connection")
	c2, err := net.Dial("tcp", p.addr())
	require.NoError(t, err) // accepted by the kernel, then closed
	defer c2.Close()
	_, err = bufio.NewReader(c2).ReadString('\n')
	assert.Error(t, err, "a drop refuses new connections")

	p.set(linkPass, 0)
	c3, err := net.Dial("tcp", p.addr())
	require.NoError(t, err)
	defer c3.Close()
	roundTrip(t, c3, bufio.NewReader(c3), "back")
	require.NoError(t, p.close())
}

func TestProxyRefusesNonLoopback(t *testing.T) {
	_, err := newProxy("n1", "n2", "10.1.2.3:80")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a loopback address")
}

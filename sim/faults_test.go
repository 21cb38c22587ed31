package sim

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// withCluster runs f against a fresh cluster in a bubble and tears it down.
func withCluster(t *testing.T, mode system.Mode, mix FaultMix, f func(c *Cluster)) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCluster(ClusterConfig{
			Seed: 7, Mode: mode, Nodes: 3, Cost: DefaultCost(), Mix: mix,
			Strategy: &Random{C: Seed(7).Rand()}, Trace: NewTrace(true, 50),
		})
		require.NoError(t, err)
		f(c)
		c.Close()
	})
}

// setUp puts u1, u2, u3 in room r, connected to n1, n2, n3.
func setUp(c *Cluster) {
	c.Do(Action{User: "u1", Kind: ActCreate, Room: "r"})
	for i, u := range []string{"u1", "u2", "u3"} {
		c.Do(Action{User: u, Kind: ActJoin, Room: "r", At: 10 * time.Millisecond})
		c.Do(Action{User: u, Kind: ActConnect, Node: i, At: 20 * time.Millisecond})
	}
	c.Sched.RunFor(100 * time.Millisecond)
}

func send(c *Cluster, user, id string) {
	c.Do(Action{User: user, Kind: ActSend, Room: "r", MsgID: id, At: c.Now()})
}

func traceLines(c *Cluster, substr string) []string {
	var out []string
	for _, l := range strings.Split(c.Trace.Text(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func delivered(c *Cluster, user, msg string) int {
	n := 0
	c.History().EachDelivery(func(e model.Event) {
		if e.User == user && e.MsgID == msg {
			n++
		}
	})
	return n
}

// A response lost after the handler ran makes the caller retry: the peer's
// handler runs again, and the recipient still sees the message once.
func TestFaultDroppedResponseRetries(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{DropResponse: 1}, func(c *Cluster) {
		setUp(c)
		send(c, "u1", "m1")
		c.Sched.RunFor(10 * time.Second)
		recv := traceLines(c, "n2 rpc.recv RelayBulkMessage bulk r#1 ->n2")
		assert.Len(t, recv, 3, "every attempt reached n2's handler:\n%s", strings.Join(recv, "\n"))
		assert.Len(t, traceLines(c, "fault drop-response RelayBulkMessage bulk r#1"), 6) // 3 attempts to n2 and n3
		assert.Equal(t, 1, delivered(c, "u2", "m1"))
		assert.Equal(t, 1, delivered(c, "u3", "m1"))
	})
}

// A dropped request never reaches the peer; the recipient catches up from
// the log instead.
func TestFaultDroppedRequestNeverArrives(t *testing.T) {
	withCluster(t, system.ModeSingle, FaultMix{DropRequest: 1}, func(c *Cluster) {
		setUp(c)
		send(c, "u1", "m1")
		c.Sched.RunFor(10 * time.Second)
		assert.Empty(t, traceLines(c, "rpc.recv RelayMessage"))
		assert.Equal(t, 1, delivered(c, "u2", "m1"), "caught up from the log")
	})
}

// A crashed node's streams and connections are gone: its clients see their
// streams end, and nothing it dialled stays open.
func TestFaultCrashDropsStreamsAndConnections(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{}, func(c *Cluster) {
		setUp(c)
		send(c, "u1", "m1")
		c.Sched.RunFor(time.Second)
		require.Positive(t, c.Net.Open("n1@1", "n"), "n1 dialled its peers")
		require.NoError(t, c.drive(func() error { c.Crash(0); return nil }))
		c.Sched.RunFor(100 * time.Millisecond)
		assert.Zero(t, c.Net.Open("n1@1", ""), "connections of the crashed node")
		ended := false
		for _, e := range c.History().Events {
			ended = ended || (e.Kind == model.KindDisconnect && e.User == "u1" && e.Err != "")
		}
		assert.True(t, ended, "u1's stream ended with the crash")
		assert.Nil(t, c.Node(0))
		require.NoError(t, c.drive(func() error { return c.Restart(0) }))
		assert.Equal(t, uint64(2), c.Node(0).Epoch(), "a restart is a new epoch")
	})
}

// A one-way cut blocks only the link it names; after heal relays flow again.
func TestFaultPartitionBlocksOnlyItsLink(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{}, func(c *Cluster) {
		setUp(c)
		c.Net.Cut("n1", "n2")
		send(c, "u1", "m1")
		c.Sched.RunFor(3 * time.Second)
		assert.Empty(t, traceLines(c, "n2 rpc.recv RelayBulkMessage bulk r#1"), "n1->n2 is cut")
		assert.Len(t, traceLines(c, "n3 rpc.recv RelayBulkMessage bulk r#1 ->n3"), 1, "n1->n3 is not")
		assert.NotEmpty(t, traceLines(c, "fault partition RelayBulkMessage bulk r#1 ->n2"))
		send(c, "u3", "m2")
		c.Sched.RunFor(3 * time.Second)
		assert.Len(t, traceLines(c, "n2 rpc.recv RelayBulkMessage bulk r#2 ->n2"), 1, "n3->n2 is not cut")

		c.Net.Heal()
		send(c, "u1", "m3")
		c.Sched.RunFor(3 * time.Second)
		assert.Len(t, traceLines(c, "n2 rpc.recv RelayBulkMessage bulk r#3 ->n2"), 1, "healed")
		assert.Equal(t, 1, delivered(c, "u2", "m1"), "m1 reached u2 from the log")
	})
}

// A client that vanishes keeps its stream open until the node's keep-alive
// notices; then the session is closed.
func TestFaultVanishedClientIsReaped(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{}, func(c *Cluster) {
		setUp(c)
		c.Do(Action{User: "u2", Kind: ActVanish, At: c.Now()})
		c.Sched.RunFor(time.Second)
		require.Equal(t, 1, c.Node(1).Metrics().Sessions, "the node has not noticed yet")
		c.Sched.RunFor(30 * time.Second)
		m := c.Node(1).Metrics()
		assert.Zero(t, m.Sessions)
		assert.Zero(t, m.OpenStreams)
		assert.NotEmpty(t, traceLines(c, "n2 session.closed u2"))
	})
}

// A cluster comes up whatever its fault mix: node registration is set-up,
// not the system under test, so no fault is drawn while the nodes start
// (with every Redis command failing, the start used to fail at "register
// n1"); the mix applies from then on.
func TestClusterStartsUnderAnyFaultMix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCluster(ClusterConfig{
			Seed: 3, Mode: system.ModeBulk, Nodes: 2, Cost: DefaultCost(),
			Mix:      FaultMix{RedisError: 1, DropRequest: 1, DropResponse: 1},
			Strategy: &Random{C: Seed(3).Rand()}, Trace: NewTrace(true, 50),
		})
		if c != nil {
			defer c.Close()
		}
		require.NoError(t, err)
		c.Do(Action{User: "u1", Kind: ActCreate, Room: "r1"})
		c.Sched.RunFor(10 * time.Second)
		assert.Contains(t, c.Trace.Text(), "fault redis-error create r1", "the mix applies once the cluster is up")
	})
}

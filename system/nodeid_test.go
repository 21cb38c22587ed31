package system

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/test/bufconn"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestMalformedNodeIDsAreRefused: a node whose id holds '@' (the route
// value's separator), ':' (the Redis keys'), a space, a control or an
// invisible character, or is empty or longer than MaxNodeIDLen, is
// refused by New: it never registers. Letters of any script, digits,
// '-', '_' and '.' are allowed.
func TestMalformedNodeIDsAreRefused(t *testing.T) {
	mr := miniredis.RunT(t)
	build := func(id string) error {
		n, err := New(Config{NodeID: id, Advertise: "a", ClusterToken: testToken},
			Deps{Listener: bufconn.Listen(1 << 10), Redis: &redis.Options{Addr: mr.Addr()}})
		if err == nil {
			n.Kill()
		}
		return err
	}
	for _, id := range []string{"n@4", "n:4", "node 4", "", strings.Repeat("n", MaxNodeIDLen+1), "n4\u200b", "n\n4", "n/4", "\xe9"} {
		assert.Error(t, build(id), "%q", id)
		assert.Error(t, ValidNodeID(id), "%q", id)
	}
	for _, id := range []string{"n1", "node-1.eu", "n_2", "nœud3", "узел-4", "ノード5", strings.Repeat("n", MaxNodeIDLen)} {
		assert.NoError(t, build(id), "%q", id)
	}
}

// TestWideNodeIDsRelayLive: nodes whose ids use the whole allowed
// alphabet relay live to each other's users in every mode.
func TestWideNodeIDsRelayLive(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 0)
		c.startNode("node-1.eu")
		c.startNode("ノード_2")
		require.NoError(t, c.chat("node-1.eu", func(cl relaypb.ChatClient) error {
			_, err := cl.CreateRoom(context.Background(), &relaypb.CreateRoomRequest{Room: "r"})
			return err
		}))
		alice, bob := c.connect("alice", "node-1.eu"), c.connect("bob", "ノード_2")
		alice.join("r")
		bob.join("r")
		alice.send("r", "m1", "x")
		c.settle()
		require.Equal(t, seqRange(1, 1), bob.seqs("r"))
		for _, d := range bob.deliveries() {
			assert.False(t, d.FromLog, "r#%d reaches bob live", d.Seq)
		}
	})
}

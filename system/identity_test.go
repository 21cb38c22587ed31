package system

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node id whose registry entry is fresh is held by a live process;
// once the entry expires (the process died and stopped heartbeating) or
// was removed (a graceful stop) the id is free again.
func TestCheckIdentity(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	d := NewDirectory(rdb)
	ctx := context.Background()

	require.NoError(t, d.CheckIdentity(ctx, "n1"), "never registered")
	epoch, err := d.Register(ctx, NodeInfo{ID: "n1", Addr: "127.0.0.1:7001", Protocol: ProtocolLatest}, 30*time.Second)
	require.NoError(t, err)
	err = d.CheckIdentity(ctx, "n1")
	require.ErrorIs(t, err, ErrNodeLive)
	assert.Contains(t, err.Error(), "127.0.0.1:7001")
	require.NoError(t, d.CheckIdentity(ctx, "n2"), "another id is free")

	mr.FastForward(31 * time.Second) // no heartbeat: the entry goes stale
	require.NoError(t, d.CheckIdentity(ctx, "n1"), "expired entry")

	_, err = d.Register(ctx, NodeInfo{ID: "n1", Addr: "127.0.0.1:7001", Protocol: ProtocolLatest}, 30*time.Second)
	require.NoError(t, err)
	require.NoError(t, d.Deregister(ctx, NodeInfo{ID: "n1", Epoch: epoch + 1}))
	require.NoError(t, d.CheckIdentity(ctx, "n1"), "deregistered")
}

package system

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
					err = n1.relayOnce(ctx, "n2", []string{"bob"}, m, true, 1)
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

package system

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system/relaypb"
)

// A handover queues its items under deferredWakes: the link's writer is
// neither started nor woken per item (it would race the further queuing),
// and the handover wakes each link once, after the last.
func TestEnqueueDeferredWakes(t *testing.T) {
	n := &Node{cfg: DefaultConfig()}
	l := newLink(n, &peer{server: "n2", epoch: 1}, 1, 0)
	d := &deferredWakes{}
	ctx := context.WithValue(context.Background(), deferredWakesKey{}, d)
	for seq := range uint64(3) {
		require.NoError(t, l.enqueue(ctx, &relaypb.RelayedMessage{Room: "r1", Seq: seq + 1}, []string{"u1"}))
	}
	require.Equal(t, []*link{l}, d.links, "the link is named once, for one wake-up")
	require.False(t, l.running, "no writer started while the items are queued")
	require.Empty(t, l.wake, "no wake-up while the items are queued")
	require.Len(t, l.queue, 3)
}

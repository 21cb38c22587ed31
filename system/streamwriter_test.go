package system

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamBlip makes a node's RelayStream calls fail to open (Unavailable,
// as on a connection that is down) while it is on.
type streamBlip struct {
	mu    sync.Mutex
	until time.Time
	tries int // stream opens refused
}

func (b *streamBlip) start(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.until = time.Now().Add(d)
}

func (b *streamBlip) refused() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tries
}

func (b *streamBlip) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	b.mu.Lock()
	on := strings.HasSuffix(method, "/RelayStream") && time.Now().Before(b.until)
	if on {
		b.tries++
	}
	b.mu.Unlock()
	if on {
		return nil, status.Error(codes.Unavailable, "connection down (blip)")
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// TestStreamBackOffHoldsUnderTraffic: a link whose stream cannot be
// opened backs off between attempts (RelayBackoff, then twice that) even
// while new traffic keeps waking its writer, so a blip shorter than the
// back-off loses nothing: every message queued meanwhile is delivered
// live once the peer is back.
func TestStreamBackOffHoldsUnderTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blip := &streamBlip{}
		c := newCluster(t, ModeStream, 2,
			withConfig(func(cfg *Config) {
				cfg.RelayAttempts = 3
				cfg.RelayBackoff = 100 * time.Millisecond
			}),
			withDeps(func(id string, d *Deps) {
				if id == "n1" {
					d.DialOptions = append(d.DialOptions, grpc.WithChainStreamInterceptor(blip.intercept))
				}
			}))
		c.createRoom("r")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("r")
		bob.join("r")

		blip.start(150 * time.Millisecond)
		const n = 20
		for i := 1; i <= n; i++ {
			alice.send("r", fmt.Sprintf("m%d", i), "x")
			time.Sleep(10 * time.Millisecond) // virtual
		}
		time.Sleep(time.Second) // virtual, well within the catch-up interval
		c.settle()

		assert.Equal(t, 2, blip.refused(), "the attempts at 0 and 100 ms fall in the blip, the one at 300 ms does not")
		require.Equal(t, seqRange(1, n), bob.seqs("r"))
		for _, d := range bob.deliveries() {
			assert.False(t, d.FromLog, "r#%d delivered live, not from the log", d.Seq)
		}
		for _, e := range eventsOf[StreamEvent](c.rec) {
			assert.NotEqual(t, "drop", e.What, "nothing dropped: %+v", e)
		}
	})
}

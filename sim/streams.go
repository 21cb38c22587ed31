package sim

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"

	"github.com/relaysim/relaysim/system/relaypb"
)

// streamCounter counts a node's open client streams from gRPC's own stats
// events, independently of what the node reports about its sessions: the
// stream-leak property compares the two.
type streamCounter struct{ open atomic.Int64 }

var connectMethod = "/" + relaypb.Chat_ServiceDesc.ServiceName + "/Connect"

type methodKey struct{}

var _ stats.Handler = (*streamCounter)(nil)

func (sc *streamCounter) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, methodKey{}, info.FullMethodName)
}

func (sc *streamCounter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if m, _ := ctx.Value(methodKey{}).(string); m != connectMethod {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		sc.open.Add(1)
	case *stats.End:
		sc.open.Add(-1)
	}
}

func (sc *streamCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (sc *streamCounter) HandleConn(context.Context, stats.ConnStats) {}

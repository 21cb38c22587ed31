// A client's unary calls: retries across nodes, the metadata and
// credential each try carries, the pending call and its recorded outcome,
// and the gRPC connections a client dials (client.go runs the actor).

package sim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// xUser is the x-user metadata of a's call: the client's own user, as a
// client sends it, but for a forged room creation, whose request names no
// user: it claims to act for As there.
func (cl *Client) xUser(a Action) string {
	if a.Kind == ActForgeCreate {
		return a.As
	}
	return cl.user
}

const (
	clientAttempts = 5
	ClientTimeout  = 2 * time.Second // a client call's deadline (the floor benchmarks replay calls with it)
	clientBackoff  = 250 * time.Millisecond
)

// reply is what the history keeps of a unary call's response.
type reply struct {
	seq       uint64
	duplicate bool
}

// call performs a unary action with retries (the same client message id on
// every try, so a send is idempotent), trying the next node on failure,
// and records its outcome with its invocation: the tries are one logical
// call from the first invocation to the last completion.
func (cl *Client) call(a Action, n int, inv invocation, f func(context.Context, relaypb.ChatClient) (reply, error)) {
	cl.callConn(a, n, inv, func(ctx context.Context, cc *grpc.ClientConn) (reply, error) {
		return f(ctx, relaypb.NewChatClient(cc))
	})
}

// callConn is call for any method on the client's connection to a node.
// A forged relay goes to the node its action names (the node a relay
// would come to), not to the client's own.
func (cl *Client) callConn(a Action, n int, inv invocation, f func(context.Context, *grpc.ClientConn) (reply, error)) {
	var err error
	var r reply
	node, try := 0, 1
	cl.setPending(a, inv)
	for ; try <= clientAttempts; try++ {
		if a.Kind.RelayForgery() {
			node = (a.Node + try - 1) % len(cl.c.nodes)
		} else {
			node = cl.callNode(a.Node, try)
		}
		ctx, cancel := context.WithTimeout(cl.ctx, ClientTimeout)
		userKey, user := system.UserMetadata(cl.xUser(a))
		ctx = metadata.AppendToOutgoingContext(ctx, system.MDOp, opLabel(fmt.Sprintf("%s a%d", cl.user, n)), system.MDAttempt, strconv.Itoa(try),
			userKey, user)
		ctx = metadata.AppendToOutgoingContext(ctx, cl.callCredential(a)...)
		r, err = f(ctx, cl.unaryConn(node))
		cancel()
		cl.c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindRPCDone, ID: fmt.Sprintf("a%d try%d", n, try), Touch: cl.c.tClientBack(cl.user, a.Kind)})
		if err == nil || !clientRetryable(err) || cl.ctx.Err() != nil {
			break
		}
		t := time.NewTimer(time.Duration(try) * clientBackoff)
		select {
		case <-t.C:
		case <-cl.ctx.Done():
			t.Stop()
		}
	}
	cl.record(a, inv, node, min(try, clientAttempts), r, err)
}

func clientRetryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

var callKinds = func() map[ActionKind]model.Kind {
	m := map[ActionKind]model.Kind{ActCreate: model.KindCreateRoom, ActJoin: model.KindJoin, ActLeave: model.KindLeave, ActSend: model.KindSend,
		ActSteal:     model.KindSend,
		ActBadCreate: model.KindBadCreate, ActBadJoin: model.KindBadJoin, ActBadJoinAs: model.KindBadJoin, ActBadSend: model.KindBadSend,
		ActBadSendID: model.KindBadSend, ActBadConnect: model.KindBadConnect}
	for _, fc := range forgeCalls {
		m[fc.action] = fc.kind
	}
	return m
}()

// payload is what a send carries: its own message's ("m:" and its id,
// padded to its Size) or a steal's (the stealer's own, steal.go).
func (cl *Client) payload(a Action) []byte {
	if a.Kind == ActSteal {
		return stealPayload(cl.user, a.MsgID)
	}
	return a.Payload()
}

// sent is what the history keeps of a send's content: its payload's
// digest and whether it is a steal (0 and false for other calls).
func (cl *Client) sent(a Action) (uint64, bool) {
	if a.Kind != ActSend && a.Kind != ActSteal {
		return 0, false
	}
	return model.PayloadDigest(cl.payload(a)), a.Kind == ActSteal
}

// setPending notes the call in flight, so that a check taken before it
// returns treats its outcome as unknown.
func (cl *Client) setPending(a Action, inv invocation) {
	ev := model.Event{Kind: callKinds[a.Kind], User: a.Named(cl.user), Room: a.Room, MsgID: a.MsgID, Err: "Pending",
		Time: cl.c.Now(), TraceLine: cl.c.Trace.Lines(), Invoked: inv.at, InvokedLine: inv.line}
	ev.Payload, ev.Steal = cl.sent(a)
	cl.mu.Lock()
	cl.pending = &ev
	cl.mu.Unlock()
}

func (cl *Client) record(a Action, inv invocation, node, tries int, r reply, err error) {
	c := cl.c
	cl.mu.Lock()
	cl.pending = nil
	cl.mu.Unlock()
	ev := model.Event{Time: c.Now(), Kind: callKinds[a.Kind], User: a.Named(cl.user), Room: a.Room, MsgID: a.MsgID, OK: err == nil, Seq: r.seq,
		Duplicate: r.duplicate, Node: c.nodes[node].id, Tries: tries, Invoked: inv.at, InvokedLine: inv.line}
	ev.Payload, ev.Steal = cl.sent(a)
	if fc, forged := forgeCallOf(a.Kind); forged {
		ev.Cred = a.Token
		c.coverage.forged(fc.name)
	}
	if a.Kind == ActSend || a.Kind == ActSteal {
		ev.Size = len(cl.payload(a))
	}
	res := fmt.Sprintf("ok seq=%d", r.seq)
	if err != nil {
		ev.Err = status.Code(err).String()
		res = "err=" + ev.Err
	} else if a.Kind == ActSend {
		c.Stats.SendsOK++
	}
	ev.TraceLine = c.Trace.Event(c.Now(), cl.user, "%s %s", a.String()[len(cl.user)+1:], res)
	if ev.Steal && !c.Trace.Frozen() {
		c.countSteal(ev)
	}
	c.rec.event(ev)
}

// callNode picks the node for a unary call: the connected node first, else
// the action's; each retry moves on to the next node.
func (cl *Client) callNode(base, try int) int {
	cl.mu.Lock()
	if cl.stream != nil && !cl.stream.vanished {
		base = cl.stream.node
	}
	cl.mu.Unlock()
	return (base + try - 1) % len(cl.c.nodes)
}

func (cl *Client) unaryConn(node int) *grpc.ClientConn {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cc := cl.unary[node]; cc != nil {
		return cc
	}
	cc := cl.c.clientConn(cl.c.nodes[node].id, cl.user+"/unary")
	cl.unary[node] = cc
	return cc
}

// clientConn dials a node for a client: bufconn through the network, no
// DNS, deterministic (jitter-free) reconnect back-off.
func (c *Cluster) clientConn(node, tag string) *grpc.ClientConn {
	cc, err := grpc.NewClient("passthrough:///"+node,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(c.Net.Dialer(tag)),
		grpc.WithConnectParams(deterministicConnect),
		grpc.WithReadBufferSize(GRPCReadBuffer),
	)
	if err != nil {
		panic(fmt.Sprintf("grpc.NewClient(%s): %v", node, err)) // only fails on malformed options
	}
	return cc
}

var deterministicConnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0, MaxDelay: 2 * time.Second},
	MinConnectTimeout: time.Second,
}

package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// A forge fault is a call of one Chat or Relay method made with a forged
// credential of one of the shapes of system.CredShapes (missing, empty,
// truncated, wrong-case, another user's, under a wrong secret, garbage, a
// wrong cluster token). A Chat call (send, join, leave, create-room,
// connect) is made by a user's client and names another user; a Relay call
// (relay, relay-bulk, relay-stream) is made by the same client dialling a
// node over the simulated network as a node would, relaying a forged
// message to the named user. The relay must answer Unauthenticated and
// change nothing (model.CheckForgedRejected); the call is recorded as a
// forged event, which no checker of real calls counts.

// forgeCall is one method a forgery may call.
type forgeCall struct {
	name   string
	action ActionKind
	kind   model.Kind
	method string // the full gRPC method name
	msg    bool   // it carries a message (a client message id)
}

// forgeCalls lists every Chat and Relay method, unary and streaming.
var forgeCalls = []forgeCall{
	{"send", ActForgeSend, model.KindForgedSend, relaypb.Chat_Send_FullMethodName, true},
	{"join", ActForgeJoin, model.KindForgedJoin, relaypb.Chat_Join_FullMethodName, false},
	{"leave", ActForgeLeave, model.KindForgedLeave, relaypb.Chat_Leave_FullMethodName, false},
	{"create-room", ActForgeCreate, model.KindForgedCreateRoom, relaypb.Chat_CreateRoom_FullMethodName, false},
	{"connect", ActForgeConnect, model.KindForgedConnect, relaypb.Chat_Connect_FullMethodName, false},
	{"relay", ActForgeRelay, model.KindForgedRelay, relaypb.Relay_RelayMessage_FullMethodName, true},
	{"relay-bulk", ActForgeRelayBulk, model.KindForgedRelayBulk, relaypb.Relay_RelayBulkMessage_FullMethodName, true},
	{"relay-stream", ActForgeRelayStream, model.KindForgedRelayStream, relaypb.Relay_RelayStream_FullMethodName, true},
}

// ForgeCalls names the methods a forgery may call, in draw order.
func ForgeCalls() []string {
	out := make([]string, len(forgeCalls))
	for i, fc := range forgeCalls {
		out[i] = fc.name
	}
	return out
}

func forgeCallNamed(name string) (forgeCall, bool) {
	for _, fc := range forgeCalls {
		if fc.name == name {
			return fc, true
		}
	}
	return forgeCall{}, false
}

func forgeCallOf(k ActionKind) (forgeCall, bool) {
	for _, fc := range forgeCalls {
		if fc.action == k {
			return fc, true
		}
	}
	return forgeCall{}, false
}

// NewForgery returns the forged call of call (one of ForgeCalls) naming as
// in room with a credential of shape token; i numbers it (its message id),
// node is where a relay call goes when as has no stream. The error names
// the valid calls or shapes.
func NewForgery(call, room, as, token string, i, node int) (Forgery, error) {
	fc, ok := forgeCallNamed(call)
	if !ok {
		return Forgery{}, fmt.Errorf("unknown forged call %q (calls: %s)", call, strings.Join(ForgeCalls(), ", "))
	}
	if _, ok := system.ParseCredShape(token); !ok {
		var names []string
		for _, s := range system.CredShapes {
			names = append(names, string(s))
		}
		return Forgery{}, fmt.Errorf("unknown credential shape %q (shapes: %s)", token, strings.Join(names, ", "))
	}
	f := Forgery{Call: call, Room: room, As: as, Token: token, Node: node}
	if fc.action == ActForgeConnect {
		f.Room = ""
	}
	if fc.msg {
		f.MsgID = fmt.Sprintf("forged%d", i)
	}
	return f, nil
}

// PlanForgeries places n forged calls inside [start, end), drawn from a
// sub-seed of their own ("forge"), so that they move no other fault kind's
// plan: each calls one of the methods with one of the credential shapes,
// every pair equally likely.
func PlanForgeries(seed Seed, n int, users, rooms []string, nodes int, start, end time.Duration) []Fault {
	span := end - start
	if span <= 0 || len(users) == 0 || len(rooms) == 0 || nodes <= 0 {
		return nil
	}
	r := seed.Derive(string(model.FaultForge)).Rand()
	var fs []Fault
	for i := range n {
		at := start + time.Duration(r.Int64N(int64(span))).Truncate(time.Millisecond)
		by, as := r.IntN(len(users)), 0
		if len(users) > 1 {
			as = (by + 1 + r.IntN(len(users)-1)) % len(users)
		}
		call := forgeCalls[r.IntN(len(forgeCalls))].name
		room := rooms[r.IntN(len(rooms))]
		token := string(system.CredShapes[r.IntN(len(system.CredShapes))])
		f, err := NewForgery(call, room, users[as], token, i+1, r.IntN(nodes))
		if err != nil {
			panic(err) // the calls and shapes are the lists drawn from
		}
		fs = append(fs, Fault{At: at, Kind: model.FaultForge, User: users[by], Forge: f})
	}
	return fs
}

// withForgeries adds forged calls to a fault plan, in time order; faults
// at the same instant keep their order, forgeries after the others.
func withForgeries(plan, forged []Fault) []Fault {
	out := append(plan, forged...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// forgedAction is the client action that makes the forged call f.
func forgedAction(f Forgery, at time.Duration, by string) Action {
	fc, _ := forgeCallNamed(f.Call)
	return Action{At: at, User: by, Kind: fc.action, Room: f.Room, MsgID: f.MsgID, As: f.As, Token: f.Token, Node: f.Node}
}

// clusterToken is the simulated cluster's relay credential.
const clusterToken = "relaysim-cluster"

// credential is the credential metadata (key, value pairs) a's call
// carries: the client's own, or a forged one of shape a.Token. A shape
// that would be valid after all (another user's credential, when the
// caller is the named user) is garbage instead.
func (cl *Client) credential(a Action) []string {
	fc, forged := forgeCallOf(a.Kind)
	if !forged {
		return []string{system.MDUserToken, cl.token}
	}
	creds := system.Credentials{UserSecret: cl.c.userSecret, ClusterToken: clusterToken}
	if kv, ok := system.CredShape(a.Token).Forge(creds, fc.method, a.As, cl.user); ok {
		return kv
	}
	kv, _ := system.CredGarbage.Forge(creds, fc.method, a.As, cl.user)
	return kv
}

// forgedRelay is the message a forged relay carries: a seq far past any
// the run sequences (a session delivers it after filling the gap, if it
// takes it at all), the forged message id, the named user as sender.
func forgedRelay(a Action) *relaypb.RelayedMessage {
	return &relaypb.RelayedMessage{Room: a.Room, Seq: 1 << 30, MsgId: a.MsgID, Sender: a.As, Payload: []byte("forged:" + a.MsgID), Origin: "forger"}
}

// forgedLink is a forged relay stream's link: well formed (origin@epoch.gen#channel),
// and one of its own, so that a stream that got through would process its
// item rather than drop it as already seen.
func forgedLink(by string, a Action) string {
	return fmt.Sprintf("forger.%s.%s@1.1#0", by, a.MsgID)
}

// forge makes a's forged call (a relay method's, or Connect) on cc.
func (cl *Client) forge(ctx context.Context, a Action, cc *grpc.ClientConn) (reply, error) {
	rc := relaypb.NewRelayClient(cc)
	switch a.Kind {
	case ActForgeRelay:
		_, err := rc.RelayMessage(ctx, &relaypb.RelayMessageRequest{Message: forgedRelay(a), Recipient: a.As})
		return reply{}, err
	case ActForgeRelayBulk:
		_, err := rc.RelayBulkMessage(ctx, &relaypb.RelayBulkMessageRequest{Message: forgedRelay(a), Recipients: []string{a.As}})
		return reply{}, err
	case ActForgeRelayStream:
		s, err := rc.RelayStream(ctx)
		if err != nil {
			return reply{}, err
		}
		// A refused stream ends at once: Send then fails and CloseAndRecv
		// says why.
		_ = s.Send(&relaypb.RelayStreamItem{Message: forgedRelay(a), Recipients: []string{a.As}, Link: forgedLink(cl.user, a), LinkSeq: 1})
		_, err = s.CloseAndRecv()
		return reply{}, err
	case ActForgeConnect:
		// Accepted if the node registered a session (its header says so);
		// the stream ends with the call's context.
		s, err := relaypb.NewChatClient(cc).Connect(ctx, &relaypb.ConnectRequest{User: a.As})
		if err != nil {
			return reply{}, err
		}
		md, err := s.Header()
		if err == nil && len(md.Get(system.MDSession)) > 0 {
			return reply{}, nil
		}
		if _, err = s.Recv(); err == nil {
			return reply{}, status.Error(codes.Internal, "stream without a session header")
		}
		return reply{}, err
	}
	panic(fmt.Sprintf("forge: %s is no forged stream or relay call", a.Kind))
}

// forgeNode is the node a forged relay goes to: the named user's stream's
// (where a relay that got through would reach it), else the planned one.
func (c *Cluster) forgeNode(a Action) int {
	if u := c.users[a.As]; u != nil {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.stream != nil && !u.stream.vanished {
			return u.stream.node
		}
	}
	return a.Node % len(c.nodes)
}

// doNow queues a ahead of its user's actions due later: an injected call
// is made when it is injected, not after the user's whole workload.
func (c *Cluster) doNow(a Action) {
	cl := c.users[a.User]
	if cl == nil {
		cl = c.newClient(a.User)
	}
	cl.mu.Lock()
	i := 0
	for i < len(cl.inbox) && cl.inbox[i].At <= a.At {
		i++
	}
	cl.inbox = slices.Insert(cl.inbox, i, a)
	cl.mu.Unlock()
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

// roomsOf lists the rooms a workload's actions name, sorted.
func roomsOf(as []Action) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range as {
		if a.Room != "" && !seen[a.Room] && !a.Kind.Bad() {
			seen[a.Room] = true
			out = append(out, a.Room)
		}
	}
	return sortedCopy(out)
}

// Forge makes forged call f from by's client now: a relay call goes to the
// node of the named user's stream if it has one (where a relay that got
// through would reach it), else to f.Node.
func (c *Cluster) Forge(f Forgery, by string) {
	a := forgedAction(f, c.Now(), by)
	if a.Kind.RelayForgery() {
		a.Node = c.forgeNode(a)
	}
	c.doNow(a)
}

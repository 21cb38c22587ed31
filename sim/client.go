package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
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

// ActionKind names a client action.
type ActionKind string

// Client actions.
const (
	ActCreate     ActionKind = "create"     // create Room
	ActJoin       ActionKind = "join"       // join Room
	ActLeave      ActionKind = "leave"      // leave Room
	ActConnect    ActionKind = "connect"    // open the delivery stream on Node (closing any other)
	ActDisconnect ActionKind = "disconnect" // close the stream cleanly
	ActVanish     ActionKind = "vanish"     // stop reading without closing the stream
	ActSend       ActionKind = "send"       // send MsgID to Room
	ActSlow       ActionKind = "slow"       // read deliveries slowly for For
	// Forged calls (forge.go), naming As with a forged credential of shape
	// Token: send MsgID to Room, join or leave Room, create Room, open a
	// delivery stream; relay MsgID of Room to As on Node as a node would,
	// one at a time, in bulk or on a relay stream.
	ActForgeSend        ActionKind = "forge-send"
	ActForgeJoin        ActionKind = "forge-join"
	ActForgeLeave       ActionKind = "forge-leave"
	ActForgeCreate      ActionKind = "forge-create-room"
	ActForgeConnect     ActionKind = "forge-connect"
	ActForgeRelay       ActionKind = "forge-relay"
	ActForgeRelayBulk   ActionKind = "forge-relay-bulk"
	ActForgeRelayStream ActionKind = "forge-relay-stream"
	// ActSteal sends MsgID, another user's message id, to Room with the
	// client's own credential and payload (steal.go).
	ActSteal ActionKind = "steal"
	// Malformed-name calls (names.go): create or join Room, or send MsgID
	// to Room, where Room is malformed; join Room as As, or connect as
	// As, where As is malformed; or send a malformed MsgID to Room.
	ActBadCreate  ActionKind = "bad-create"
	ActBadJoin    ActionKind = "bad-join"
	ActBadJoinAs  ActionKind = "bad-join-as"
	ActBadSend    ActionKind = "bad-send"
	ActBadSendID  ActionKind = "bad-send-id"
	ActBadConnect ActionKind = "bad-connect"
)

// bad reports whether k is a malformed-name call.
func (k ActionKind) bad() bool {
	switch k {
	case ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID, ActBadConnect:
		return true
	}
	return false
}

// Action is one thing a simulated user does at virtual time At.
type Action struct {
	At    time.Duration
	User  string
	Kind  ActionKind
	Room  string
	Node  int
	MsgID string
	For   time.Duration
	// Size pads a send's payload ("m:"+MsgID) to Size bytes (0: unpadded).
	Size int
	// As and Token: a forged call's named user and credential form.
	As, Token string
}

// payload is a send's payload: "m:"+MsgID, padded with '.' to Size bytes.
func (a Action) payload() []byte {
	p := []byte("m:" + a.MsgID)
	for len(p) < a.Size {
		p = append(p, '.')
	}
	return p
}

func (a Action) String() string {
	s := fmt.Sprintf("%s %s", a.User, a.Kind)
	switch a.Kind {
	case ActCreate, ActJoin, ActLeave:
		s += " " + a.Room
	case ActConnect:
		s += fmt.Sprintf(" n%d", a.Node+1)
	case ActSend, ActSteal:
		s += " " + a.Room + " " + a.MsgID
		if a.Size > 0 {
			s += fmt.Sprintf(" size=%d", a.Size)
		}
	case ActSlow:
		s += " " + a.For.String()
	case ActForgeSend, ActForgeJoin, ActForgeLeave, ActForgeCreate, ActForgeConnect, ActForgeRelay, ActForgeRelayBulk, ActForgeRelayStream:
		if a.Room != "" {
			s += " " + a.Room
		}
		if a.MsgID != "" {
			s += " " + a.MsgID
		}
		s += " as " + a.As + " token=" + a.Token
	case ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID:
		s += " " + strconv.Quote(a.Room)
		if a.MsgID != "" {
			s += " " + strconv.Quote(a.MsgID)
		}
		if a.As != "" {
			s += " as " + strconv.Quote(a.As)
		}
	case ActBadConnect:
		s += fmt.Sprintf(" n%d as %s", a.Node+1, strconv.Quote(a.As))
	}
	return s
}

// xUser is the x-user metadata of a's call: the client's own user, as a
// client sends it, but for a forged room creation, whose request names no
// user: it claims to act for As there.
func (cl *Client) xUser(a Action) string {
	if a.Kind == ActForgeCreate {
		return a.As
	}
	return cl.user
}

// named is the user a call's request names: a forged call's As (or a
// malformed-name call's, even empty), else the client's own user.
func (a Action) named(user string) string {
	if a.As != "" || a.Kind == ActBadJoinAs || a.Kind == ActBadConnect {
		return a.As
	}
	return user
}

// Client is one simulated user: an actor goroutine that performs its
// actions in order, and a receiver goroutine per open stream.
type Client struct {
	c    *Cluster
	user string
	ctx  context.Context
	stop context.CancelFunc
	wake chan struct{}
	done chan struct{}
	// token is the user's credential (system.UserToken).
	token string

	mu    sync.Mutex // guards the fields below; never held across a block
	inbox []Action
	// popped counts the actions taken from the front of inbox since its
	// backing array was last copied (see pop).
	popped    int
	n         int // actions started
	stream    *clientStream
	zombies   []*clientStream // vanished streams, closed at teardown
	unary     map[int]*grpc.ClientConn
	cursors   map[string]uint64
	slowUntil time.Duration
	gen       int
	// pending is the call in flight (outcome unknown until it returns).
	pending *model.Event
}

type clientStream struct {
	gen      int
	node     int
	cc       *grpc.ClientConn
	cancel   context.CancelFunc
	recvDone chan struct{}
	closing  bool
	vanished bool
	tag      string
}

// Do queues an action for its user (creating the user's client).
func (c *Cluster) Do(a Action) {
	cl := c.users[a.User]
	if cl == nil {
		cl = c.newClient(a.User)
	}
	cl.mu.Lock()
	cl.inbox = append(cl.inbox, a)
	cl.mu.Unlock()
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

func (c *Cluster) newClient(user string) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	cl := &Client{c: c, user: user, token: system.UserToken(c.userSecret, user), ctx: ctx, stop: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
		unary: map[int]*grpc.ClientConn{}, cursors: map[string]uint64{}}
	c.users[user] = cl
	go cl.run()
	return cl
}

func (cl *Client) run() {
	defer close(cl.done)
	for {
		a, ok := cl.next()
		if !ok {
			return
		}
		if d := a.At - cl.c.Now(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-cl.wake:
				// An injected action (doNow) may be due before a: put a
				// back in its place and take the earliest.
				t.Stop()
				cl.requeue(a)
				continue
			case <-cl.ctx.Done():
				t.Stop()
				return
			}
		}
		cl.mu.Lock()
		cl.n++
		id := fmt.Sprintf("a%d %s", cl.n, a.String()[len(cl.user)+1:])
		cl.mu.Unlock()
		cl.c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindClient, ID: id, Touch: cl.c.tClient(cl.user)})
		if cl.c.Trace.Frozen() {
			return // teardown began while the action waited
		}
		cl.do(a, cl.n, invocation{cl.c.Now(), cl.c.Trace.Lines()})
	}
}

// requeue puts a, taken from the inbox but not yet due, back where it
// was: after the actions due before it (an injected one), before those
// due at the same time or later (its own order among them).
func (cl *Client) requeue(a Action) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	i := 0
	for i < len(cl.inbox) && cl.inbox[i].At < a.At {
		i++
	}
	cl.inbox = slices.Insert(cl.inbox, i, a)
}

// invocation is when a client call was invoked: virtual time and the trace
// line of the client gate that released it.
type invocation struct {
	at   time.Duration
	line int
}

// next waits for the next queued action; false once the client is stopped.
func (cl *Client) next() (Action, bool) {
	for {
		cl.mu.Lock()
		if len(cl.inbox) > 0 {
			a := cl.pop()
			cl.mu.Unlock()
			return a, true
		}
		cl.mu.Unlock()
		select {
		case <-cl.wake:
		case <-cl.ctx.Done():
			return Action{}, false
		}
	}
}

// pop takes the first action of the inbox (cl.mu held). The whole run's
// actions are queued at its start; a slice re-sliced from the front would
// keep every taken action in memory until the run ends, so the slot is
// cleared and the rest is copied to a new array once more has been taken
// than remains (amortised O(1) a pop; the order is unchanged).
func (cl *Client) pop() Action {
	a := cl.inbox[0]
	cl.inbox[0] = Action{}
	cl.inbox = cl.inbox[1:]
	cl.popped++
	if cl.popped > len(cl.inbox) {
		var rest []Action
		if len(cl.inbox) > 0 {
			rest = make([]Action, len(cl.inbox))
			copy(rest, cl.inbox)
		}
		cl.inbox, cl.popped = rest, 0
	}
	return a
}

func (cl *Client) do(a Action, n int, inv invocation) {
	switch a.Kind {
	case ActCreate:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			_, err := ch.CreateRoom(ctx, &relaypb.CreateRoomRequest{Room: a.Room})
			return reply{}, err
		})
	case ActJoin:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Join(ctx, &relaypb.JoinRequest{Room: a.Room, User: cl.user})
			return reply{seq: r.GetFromSeq()}, err
		})
	case ActLeave:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Leave(ctx, &relaypb.LeaveRequest{Room: a.Room, User: cl.user})
			return reply{seq: r.GetToSeq()}, err
		})
	case ActSend, ActSteal:
		if a.Kind == ActSend {
			cl.c.Stats.Sends++
		}
		payload := cl.payload(a)
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Send(ctx, &relaypb.SendRequest{Room: a.Room, User: cl.user, ClientMsgId: a.MsgID, Payload: payload})
			return reply{seq: r.GetSeq(), duplicate: r.GetDuplicate()}, err
		})
	case ActForgeSend:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Send(ctx, &relaypb.SendRequest{Room: a.Room, User: a.As, ClientMsgId: a.MsgID, Payload: []byte("forged:" + a.MsgID)})
			return reply{seq: r.GetSeq(), duplicate: r.GetDuplicate()}, err
		})
	case ActForgeJoin:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Join(ctx, &relaypb.JoinRequest{Room: a.Room, User: a.As})
			return reply{seq: r.GetFromSeq()}, err
		})
	case ActForgeLeave:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Leave(ctx, &relaypb.LeaveRequest{Room: a.Room, User: a.As})
			return reply{seq: r.GetToSeq()}, err
		})
	case ActBadCreate, ActForgeCreate:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			_, err := ch.CreateRoom(ctx, &relaypb.CreateRoomRequest{Room: a.Room})
			return reply{}, err
		})
	case ActBadJoin, ActBadJoinAs:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Join(ctx, &relaypb.JoinRequest{Room: a.Room, User: a.named(cl.user)})
			return reply{seq: r.GetFromSeq()}, err
		})
	case ActBadSend, ActBadSendID:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Send(ctx, &relaypb.SendRequest{Room: a.Room, User: a.named(cl.user), ClientMsgId: a.MsgID, Payload: []byte("bad")})
			return reply{seq: r.GetSeq(), duplicate: r.GetDuplicate()}, err
		})
	case ActBadConnect:
		cl.badConnect(a, n, inv)
	case ActForgeConnect, ActForgeRelay, ActForgeRelayBulk, ActForgeRelayStream:
		cl.callConn(a, n, inv, func(ctx context.Context, cc *grpc.ClientConn) (reply, error) { return cl.forge(ctx, a, cc) })
	case ActConnect:
		cl.connect(a.Node, inv)
	case ActDisconnect:
		cl.disconnect(inv)
	case ActVanish:
		cl.vanish()
	case ActSlow:
		cl.mu.Lock()
		cl.slowUntil = cl.c.Now() + a.For
		cl.mu.Unlock()
	}
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
		if relayForgery(a.Kind) {
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
		cl.c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindRPCDone, ID: fmt.Sprintf("a%d try%d", n, try), Touch: cl.c.tClient(cl.user)})
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

// relayForgery reports whether k is a forged call of a Relay method.
func relayForgery(k ActionKind) bool {
	return k == ActForgeRelay || k == ActForgeRelayBulk || k == ActForgeRelayStream
}

// payload is what a send carries: its own message's ("m:" and its id,
// padded to its Size) or a steal's (the stealer's own, steal.go).
func (cl *Client) payload(a Action) []byte {
	if a.Kind == ActSteal {
		return stealPayload(cl.user, a.MsgID)
	}
	return a.payload()
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
	ev := model.Event{Kind: callKinds[a.Kind], User: a.named(cl.user), Room: a.Room, MsgID: a.MsgID, Err: "Pending",
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
	ev := model.Event{Time: c.Now(), Kind: callKinds[a.Kind], User: a.named(cl.user), Room: a.Room, MsgID: a.MsgID, OK: err == nil, Seq: r.seq,
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

// connect opens the delivery stream on node (or the next live one) with the
// client's cursors, after closing any open stream.
func (cl *Client) connect(node int, inv invocation) {
	c := cl.c
	cl.disconnect(inv)
	cl.mu.Lock()
	cl.gen++
	gen := cl.gen
	cursors := make([]*relaypb.Cursor, 0, len(cl.cursors))
	sent := make(map[string]uint64, len(cl.cursors))
	for r, s := range cl.cursors {
		cursors = append(cursors, &relaypb.Cursor{Room: r, Seq: s})
		sent[r] = s
	}
	cl.mu.Unlock()
	sort.Slice(cursors, func(i, j int) bool { return cursors[i].Room < cursors[j].Room })
	tag := fmt.Sprintf("%s#%d", cl.user, gen)
	id := c.nodes[node].id
	cc := c.clientConn(id, tag)
	ctx, cancel := context.WithCancel(cl.ctx)
	userKey, user := system.UserMetadata(cl.user)
	ctx = metadata.AppendToOutgoingContext(ctx, system.MDOp, opLabel(fmt.Sprintf("%s #%d", cl.user, gen)), userKey, user, system.MDUserToken, cl.token)
	stream, err := relaypb.NewChatClient(cc).Connect(ctx, &relaypb.ConnectRequest{User: cl.user, Cursors: cursors})
	if err == nil {
		// Wait until the node registered the session (its header), so a
		// quick disconnect never races the node's accept. A stream that
		// ended without headers ends with a status: read it.
		var md metadata.MD
		if md, err = stream.Header(); err == nil && len(md.Get(system.MDSession)) == 0 {
			if _, err = stream.Recv(); err == nil {
				err = status.Error(codes.Internal, "stream without a session header")
			}
		}
	}
	if err != nil {
		cancel()
		_ = cc.Close()
		line := c.Trace.Event(c.Now(), cl.user, "connect %s #%d err=%s", id, gen, status.Code(err))
		c.rec.event(model.Event{Time: c.Now(), Kind: model.KindConnect, User: cl.user, Node: id, Err: status.Code(err).String(), Cursors: sent,
			Invoked: inv.at, InvokedLine: inv.line, TraceLine: line})
		return
	}
	cs := &clientStream{gen: gen, node: node, cc: cc, cancel: cancel, recvDone: make(chan struct{}), tag: tag}
	cl.mu.Lock()
	cl.stream = cs
	cl.mu.Unlock()
	line := c.Trace.Event(c.Now(), cl.user, "connect %s #%d cursors=%d", id, gen, len(cursors))
	c.rec.event(model.Event{Time: c.Now(), Kind: model.KindConnect, User: cl.user, Node: id, OK: true, Cursors: sent,
		Invoked: inv.at, InvokedLine: inv.line, TraceLine: line})
	go cl.recv(cs, stream)
}

// recv reads deliveries until the stream ends. Every delivery parks at a
// gate before it is recorded, so the history's order is the scheduler's.
func (cl *Client) recv(cs *clientStream, stream relaypb.Chat_ConnectClient) {
	defer close(cs.recvDone)
	c := cl.c
	for {
		d, err := stream.Recv()
		if err != nil {
			c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindClient, ID: fmt.Sprintf("#%d end", cs.gen), Touch: c.tClient(cl.user)})
			cl.streamEnded(cs, err)
			return
		}
		cl.mu.Lock()
		slow := cl.slowUntil - c.Now()
		cl.mu.Unlock()
		c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindClient, ID: fmt.Sprintf("#%d recv %s#%d", cs.gen, d.Room, d.Seq), Extra: max(slow, 0), Touch: c.tClient(cl.user)})
		cl.mu.Lock()
		dead := cs.vanished || cs.closing
		if !dead && d.Seq > cl.cursors[d.Room] {
			cl.cursors[d.Room] = d.Seq
		}
		cl.mu.Unlock()
		if dead {
			continue // the client is gone: nobody reads this
		}
		c.Stats.Deliveries++
		src := map[bool]string{true: " log"}[d.FromLog]
		line := c.Trace.Event(c.Now(), cl.user, "deliver %s#%d %s%s", d.Room, d.Seq, d.MsgId, src)
		c.rec.delivery(model.Event{Time: c.Now(), Kind: model.KindDeliver, User: cl.user, Room: d.Room, Seq: d.Seq, MsgID: d.MsgId,
			Sender: d.Sender, Payload: model.PayloadDigest(d.Payload), FromLog: d.FromLog, Node: c.nodes[cs.node].id, TraceLine: line})
	}
}

// streamEnded records a stream the server ended (the client did not).
func (cl *Client) streamEnded(cs *clientStream, err error) {
	c := cl.c
	if c.Trace.Frozen() {
		return
	}
	cl.mu.Lock()
	mine := cl.stream == cs && !cs.closing && !cs.vanished
	if mine {
		cl.stream = nil
	}
	cl.mu.Unlock()
	if !mine {
		return
	}
	cs.cancel()
	_ = cs.cc.Close()
	line := c.Trace.Event(c.Now(), cl.user, "stream #%d ended by server: %s", cs.gen, status.Code(err))
	c.rec.event(model.Event{Time: c.Now(), Kind: model.KindDisconnect, User: cl.user, Node: c.nodes[cs.node].id, Err: status.Code(err).String(), TraceLine: line})
	// Like a real client, reconnect (to the next node) after a pause.
	c.Do(Action{At: c.Now() + reconnectAfter, User: cl.user, Kind: ActConnect, Node: (cs.node + 1) % len(c.nodes)})
}

const reconnectAfter = time.Second

// disconnect closes the open stream cleanly and waits for its receiver.
func (cl *Client) disconnect(inv invocation) {
	cl.mu.Lock()
	cs := cl.stream
	cl.stream = nil
	if cs != nil {
		cs.closing = true
	}
	cl.mu.Unlock()
	if cs == nil {
		return
	}
	cs.cancel()
	_ = cs.cc.Close()
	<-cs.recvDone
	c := cl.c
	line := c.Trace.Event(c.Now(), cl.user, "disconnect #%d", cs.gen)
	c.rec.event(model.Event{Time: c.Now(), Kind: model.KindDisconnect, User: cl.user, Node: c.nodes[cs.node].id, TraceLine: line,
		Invoked: inv.at, InvokedLine: inv.line})
}

// vanish makes the client stop reading without closing its stream: its
// connection becomes a black hole and only the server's keep-alive can
// notice. The connection is closed at teardown.
func (cl *Client) vanish() {
	cl.mu.Lock()
	cs := cl.stream
	cl.stream = nil
	if cs != nil {
		cs.vanished = true
		cl.zombies = append(cl.zombies, cs)
	}
	cl.mu.Unlock()
	if cs == nil {
		return
	}
	c := cl.c
	c.Net.VanishFrom(cs.tag)
	line := c.Trace.Event(c.Now(), cl.user, "vanish #%d", cs.gen)
	c.rec.event(model.Event{Time: c.Now(), Kind: model.KindDisconnect, Vanish: true, User: cl.user, Node: c.nodes[cs.node].id, TraceLine: line})
}

// close stops the actor and closes every connection (teardown).
func (cl *Client) close() {
	cl.stop()
	<-cl.done
	cl.mu.Lock()
	streams := append([]*clientStream(nil), cl.zombies...)
	if cl.stream != nil {
		streams = append(streams, cl.stream)
		cl.stream.closing = true
	}
	cl.stream = nil
	unary := cl.unary
	cl.unary = map[int]*grpc.ClientConn{}
	cl.mu.Unlock()
	for _, cs := range streams {
		cs.cancel()
		_ = cs.cc.Close()
		<-cs.recvDone
	}
	for i := range len(cl.c.nodes) {
		if cc := unary[i]; cc != nil {
			_ = cc.Close()
		}
	}
}

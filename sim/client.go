// The simulated client's actor: Do queues a user's actions, and one
// goroutine a user takes them in order, parks each at a client gate and
// performs it. The Action type is in sim/plan/action.go, the unary calls in
// clientcall.go, the delivery stream in clientstream.go.

package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

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
	// stalled: the receiver reads nothing until stallUntil (-1: until
	// unstall); stallWake is closed when a stall ends early.
	stalled    bool
	stallUntil time.Duration
	stallWake  chan struct{}
	gen        int
	// pending is the call in flight (outcome unknown until it returns).
	pending *model.Event
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
		unary: map[int]*grpc.ClientConn{}, cursors: map[string]uint64{}, stallWake: make(chan struct{})}
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
		cl.c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindClient, ID: id, Touch: cl.c.tClientAction(cl.user, a.Kind)})
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
			r, err := ch.Join(ctx, &relaypb.JoinRequest{Room: a.Room, User: a.Named(cl.user)})
			return reply{seq: r.GetFromSeq()}, err
		})
	case ActBadSend, ActBadSendID:
		cl.call(a, n, inv, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Send(ctx, &relaypb.SendRequest{Room: a.Room, User: a.Named(cl.user), ClientMsgId: a.MsgID, Payload: []byte("bad")})
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
	case ActStall:
		cl.setStall(a.For)
	case ActSlow:
		cl.mu.Lock()
		cl.slowUntil = cl.c.Now() + a.For
		cl.mu.Unlock()
	}
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

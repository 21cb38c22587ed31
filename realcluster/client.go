package realcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// Client behaviour, as the simulated client's (sim/clientcall.go): a unary
// call is tried up to clientAttempts times with the same client message
// id, moving to the next node on each retry.
const (
	clientAttempts = 5
	clientTimeout  = 2 * time.Second
	clientBackoff  = 250 * time.Millisecond
	connectTimeout = 3 * time.Second
)

// client is one user: its calls are made one at a time by its own
// goroutine; each open stream has a receiver goroutine.
type client struct {
	user  string
	token string
	nodes []string
	conns []*grpc.ClientConn // shared by every client, one per node
	rec   *recorder
	ctx   context.Context
	r     *rand.Rand

	mu       sync.Mutex
	stream   *cstream
	cursors  map[string]uint64
	got      map[string]map[uint64]bool // delivered seqs per room
	ended    bool                       // the server ended the open stream: reconnect
	lastNode int
	msgs     int
	ops      int
}

type cstream struct {
	node    int
	cancel  context.CancelFunc
	done    chan struct{}
	closing bool
}

func newClient(ctx context.Context, user, secret string, nodes []string, conns []*grpc.ClientConn, rec *recorder, seed uint64) *client {
	return &client{user: user, token: system.UserToken(secret, user), nodes: nodes, conns: conns, rec: rec, ctx: ctx,
		r: rand.New(rand.NewPCG(seed, hashString(user))), cursors: map[string]uint64{}, got: map[string]map[uint64]bool{}}
}

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

// reply is what the history keeps of a unary call's response.
type reply struct {
	seq       uint64
	duplicate bool
	// payload is the digest of the payload a send sent (its call sets it
	// whatever the outcome: the content check compares the log with it).
	payload uint64
}

type callFunc func(ctx context.Context, ch relaypb.ChatClient) (reply, error)

// call makes one logical call (with retries when attempts > 1) and records
// it from its first invocation to its last completion.
func (c *client) call(kind model.Kind, named, room, msgID, token string, node, attempts int, f callFunc) model.Event {
	inv := c.rec.now()
	var r reply
	var err error
	n, tries := node, 0
	for try := 1; try <= attempts; try++ {
		tries = try
		n = c.callNode(node, try)
		ctx, cancel := context.WithTimeout(c.ctx, clientTimeout)
		ctx = metadata.AppendToOutgoingContext(ctx, system.MDUser, c.user, system.MDUserToken, token,
			system.MDOp, fmt.Sprintf("%s %s", c.user, kind), system.MDAttempt, fmt.Sprint(try))
		r, err = f(ctx, relaypb.NewChatClient(c.conns[n]))
		cancel()
		if err == nil || !retryable(err) || c.ctx.Err() != nil || try == attempts {
			break
		}
		if !sleepCtx(c.ctx, time.Duration(try)*clientBackoff) {
			break
		}
	}
	c.mu.Lock()
	c.ops++
	c.mu.Unlock()
	ev := model.Event{Kind: kind, User: named, Room: room, MsgID: msgID, OK: err == nil, Seq: r.seq, Duplicate: r.duplicate,
		Payload: r.payload, Node: c.nodes[n], Tries: tries, Invoked: inv}
	if err != nil {
		ev.Err = status.Code(err).String()
	}
	return c.rec.record(ev)
}

// callNode picks a call's node: the connected node first, else the
// given one; each retry moves on to the next node.
func (c *client) callNode(base, try int) int {
	c.mu.Lock()
	if c.stream != nil {
		base = c.stream.node
	}
	c.mu.Unlock()
	return (base + try - 1) % len(c.nodes)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *client) createRoom(room string, node int) model.Event {
	return c.call(model.KindCreateRoom, c.user, room, "", c.token, node, clientAttempts, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
		_, err := ch.CreateRoom(ctx, &relaypb.CreateRoomRequest{Room: room})
		return reply{}, err
	})
}

func (c *client) join(room string, node int) model.Event {
	return c.call(model.KindJoin, c.user, room, "", c.token, node, clientAttempts, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
		r, err := ch.Join(ctx, &relaypb.JoinRequest{Room: room, User: c.user})
		return reply{seq: r.GetFromSeq()}, err
	})
}

func (c *client) leave(room string, node int) model.Event {
	return c.call(model.KindLeave, c.user, room, "", c.token, node, clientAttempts, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
		r, err := ch.Leave(ctx, &relaypb.LeaveRequest{Room: room, User: c.user})
		return reply{seq: r.GetToSeq()}, err
	})
}

// payloadOf is the payload every send of msgID carries (the content
// check, model.CheckContent, compares the room log with the digest each
// send recorded, and every delivery with the log).
func payloadOf(msgID string) []byte {
	return []byte("m:" + msgID + ":" + fmt.Sprint(hashString(msgID)))
}

func (c *client) send(room string, node int) model.Event {
	c.mu.Lock()
	c.msgs++
	id := fmt.Sprintf("%s-m%d", c.user, c.msgs)
	c.mu.Unlock()
	return c.call(model.KindSend, c.user, room, id, c.token, node, clientAttempts, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
		p := payloadOf(id)
		r, err := ch.Send(ctx, &relaypb.SendRequest{Room: room, User: c.user, ClientMsgId: id, Payload: p})
		return reply{seq: r.GetSeq(), duplicate: r.GetDuplicate(), payload: model.PayloadDigest(p)}, err
	})
}

// forge makes one call naming another user with a credential that is not
// theirs (the simulator's forge fault): the client's own valid one, or
// garbage, or one under a guessed secret. One try: it is not retried.
func (c *client) forge(call, room, as, form, msgID string, node int) model.Event {
	token := c.token // other-user: valid, but for c.user
	switch form {
	case "garbage":
		token = "not-a-credential"
	case "wrong-secret":
		token = system.UserToken("guessed-secret", as)
	}
	if call == "join" {
		return c.call(model.KindForgedJoin, as, room, "", token, node, 1, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
			r, err := ch.Join(ctx, &relaypb.JoinRequest{Room: room, User: as})
			return reply{seq: r.GetFromSeq()}, err
		})
	}
	return c.call(model.KindForgedSend, as, room, msgID, token, node, 1, func(ctx context.Context, ch relaypb.ChatClient) (reply, error) {
		r, err := ch.Send(ctx, &relaypb.SendRequest{Room: room, User: as, ClientMsgId: msgID, Payload: []byte("forged:" + msgID)})
		return reply{seq: r.GetSeq(), duplicate: r.GetDuplicate()}, err
	})
}

// connect opens the delivery stream on node with the client's cursors,
// after closing any open stream; it waits for the session header (the
// node registered the session) at most connectTimeout.
func (c *client) connect(node int) model.Event {
	inv := c.rec.now()
	c.disconnect()
	c.mu.Lock()
	cursors := make([]*relaypb.Cursor, 0, len(c.cursors))
	sent := make(map[string]uint64, len(c.cursors))
	for r, s := range c.cursors {
		cursors = append(cursors, &relaypb.Cursor{Room: r, Seq: s})
		sent[r] = s
	}
	c.ended = false
	c.lastNode = node
	c.ops++
	c.mu.Unlock()
	sort.Slice(cursors, func(i, j int) bool { return cursors[i].Room < cursors[j].Room })
	ctx, cancel := context.WithCancel(c.ctx)
	ctx = metadata.AppendToOutgoingContext(ctx, system.MDUser, c.user, system.MDUserToken, c.token)
	timer := time.AfterFunc(connectTimeout, cancel)
	stream, err := relaypb.NewChatClient(c.conns[node]).Connect(ctx, &relaypb.ConnectRequest{User: c.user, Cursors: cursors})
	if err == nil {
		var md metadata.MD
		if md, err = stream.Header(); err == nil && len(md.Get(system.MDSession)) == 0 {
			if _, err = stream.Recv(); err == nil {
				err = status.Error(codes.Internal, "stream without a session header")
			}
		}
	}
	if !timer.Stop() && err == nil {
		err = status.Error(codes.DeadlineExceeded, "no session header in time")
	}
	ev := model.Event{Kind: model.KindConnect, User: c.user, Node: c.nodes[node], Cursors: sent, Invoked: inv}
	if err != nil {
		cancel()
		if ctxErr := ctx.Err(); ctxErr != nil && c.ctx.Err() == nil {
			err = status.Error(codes.DeadlineExceeded, "no session header in time")
		}
		ev.Err = status.Code(err).String()
		c.mu.Lock()
		c.ended = true // try again
		c.mu.Unlock()
		return c.rec.record(ev)
	}
	cs := &cstream{node: node, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	c.stream = cs
	c.mu.Unlock()
	ev.OK = true
	ev = c.rec.record(ev)
	go c.recv(cs, stream)
	return ev
}

// recv records deliveries until the stream ends.
func (c *client) recv(cs *cstream, stream relaypb.Chat_ConnectClient) {
	defer close(cs.done)
	for {
		d, err := stream.Recv()
		if err != nil {
			c.streamEnded(cs, err)
			return
		}
		c.mu.Lock()
		dead := cs.closing
		if !dead {
			if d.Seq > c.cursors[d.Room] {
				c.cursors[d.Room] = d.Seq
			}
			if c.got[d.Room] == nil {
				c.got[d.Room] = map[uint64]bool{}
			}
			c.got[d.Room][d.Seq] = true
		}
		c.mu.Unlock()
		if dead {
			continue // the client is closing it: nobody reads this
		}
		c.rec.record(model.Event{Kind: model.KindDeliver, User: c.user, Room: d.Room, Seq: d.Seq, MsgID: d.MsgId,
			Sender: d.Sender, Payload: model.PayloadDigest(d.Payload), FromLog: d.FromLog, Node: c.nodes[cs.node]})
	}
}

// streamEnded records a stream the server ended (the client did not).
func (c *client) streamEnded(cs *cstream, err error) {
	c.mu.Lock()
	mine := c.stream == cs && !cs.closing
	if mine {
		c.stream = nil
		c.ended = true
	}
	c.mu.Unlock()
	if !mine {
		return
	}
	cs.cancel()
	c.rec.record(model.Event{Kind: model.KindDisconnect, User: c.user, Node: c.nodes[cs.node], Err: status.Code(err).String()})
}

// disconnect closes the open stream cleanly and waits for its receiver.
func (c *client) disconnect() {
	inv := c.rec.now()
	c.mu.Lock()
	cs := c.stream
	c.stream = nil
	if cs != nil {
		cs.closing = true
	}
	c.mu.Unlock()
	if cs == nil {
		return
	}
	cs.cancel()
	<-cs.done
	c.rec.record(model.Event{Kind: model.KindDisconnect, User: c.user, Node: c.nodes[cs.node], Invoked: inv})
}

// needsReconnect says whether the server ended the client's stream (or a
// connect failed) since it last connected, and on which node it was.
func (c *client) needsReconnect() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastNode, c.ended && c.stream == nil
}

func (c *client) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream != nil
}

// delivered reports whether the client has received every seq of seqs in
// room.
func (c *client) delivered(room string, seqs []uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range seqs {
		if !c.got[room][s] {
			return false
		}
	}
	return true
}

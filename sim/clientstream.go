// A client's delivery stream: connecting with its cursors, receiving
// deliveries through the client gate, the server ending it, a clean
// disconnect and a vanish (client.go runs the actor).

package sim

import (
	"context"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

type clientStream struct {
	gen      int
	node     int
	cc       *grpc.ClientConn
	ctx      context.Context
	cancel   context.CancelFunc
	recvDone chan struct{}
	closing  bool
	vanished bool
	tag      string
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
	cs := &clientStream{gen: gen, node: node, cc: cc, ctx: ctx, cancel: cancel, recvDone: make(chan struct{}), tag: tag}
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
		cl.waitStall(cs)
		d, err := stream.Recv()
		if err != nil {
			c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindClient, ID: fmt.Sprintf("#%d end", cs.gen), Touch: c.tClientEnd(cl.user, c.nodes[cs.node].id)})
			cl.streamEnded(cs, err)
			return
		}
		cl.mu.Lock()
		slow := cl.slowUntil - c.Now()
		cl.mu.Unlock()
		c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindClient, ID: fmt.Sprintf("#%d recv %s#%d", cs.gen, d.Room, d.Seq), Extra: max(slow, 0), Touch: c.tClientTake(cl.user)})
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

package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// Relay streams (stream mode, protocol v3) under the scheduler. A link's
// writer opens a stream, writes items and closes it for the cumulative ack;
// the receiver's handler reads the items one by one. Each of those steps
// is gated with the item's identity, so their order is the scheduler's:
//
//   - the sender parks before opening a stream, before each write and
//     once the ack (or the break) is back;
//   - the receiver parks after reading each item and at the stream's end.
//
// A write returns without waiting for the receiver; one that flow control
// held wakes outside the scheduler, and its writer touches only the link's
// own state before it parks at its next gate.
//
// Network faults act on the stream as they would on a TCP connection: a
// partition or a dropped write breaks the stream (the writer resends what
// was not acknowledged on a new one), a lost ack breaks it after the
// receiver processed everything (the resend is dropped as duplicates), and
// a delay holds the write.

// peerStream wraps a node's relay streams to peers.
func (h *nodeHooks) peerStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c := h.c
	if c.Trace.Frozen() {
		return streamer(ctx, desc, cc, method, opts...)
	}
	target := strings.TrimPrefix(cc.Target(), "passthrough:///")
	link := system.Label(ctx)
	id := shortMethod(method) + " " + link + " " + attemptOf(ctx)
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCSend, ID: id})
	h.relayCall(method, target, false)
	h.linkEvent(link, "open")
	ctx, cancel := context.WithCancel(ctx)
	s := &simClientStream{h: h, id: id, link: link, target: target, cancel: cancel}
	if c.Net.Blocked(h.node, target) {
		cancel()
		return nil, s.broken(string(model.FaultPartition), "open")
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	// Opening waits for the connection to be ready, which wakes the writer
	// outside the scheduler: park before it goes on.
	if err != nil {
		cancel()
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " failed"})
		return nil, err
	}
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " open"})
	s.ClientStream = cs
	return s, nil
}

type simClientStream struct {
	grpc.ClientStream
	h      *nodeHooks
	id     string
	link   string // the link's operation label: "stream n1@1.2#0 ->n2"
	target string
	cancel context.CancelFunc
	items  int // items written on the stream
}

func (s *simClientStream) SendMsg(m any) error {
	h, c := s.h, s.h.c
	it, _ := m.(*relaypb.RelayStreamItem)
	if it == nil || c.Trace.Frozen() {
		return s.ClientStream.SendMsg(m)
	}
	item := fmt.Sprintf("%s#%d #%d", it.GetMessage().GetRoom(), it.GetMessage().GetSeq(), it.LinkSeq)
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCSend, ID: s.id + " " + item, Units: len(it.Recipients)})
	nd := c.netDraws(h.node + "|" + s.id + " " + item)
	switch {
	case c.Net.Blocked(h.node, s.target):
		return s.broken(string(model.FaultPartition), item)
	case nd.hit(drawDropRequest, c.faults.mix.DropRequest):
		return s.broken(string(model.FaultStreamBreak), item)
	}
	if nd.hit(drawDelay, c.faults.mix.Delay) {
		d := nd.delayBy()
		m := system.Message{Room: it.GetMessage().GetRoom(), Seq: it.GetMessage().GetSeq()}
		c.inject(injection{node: h.node, what: fmt.Sprintf("%s %s %s by %v", model.FaultDelay, s.id, item, d),
			record: c.opFault(model.FaultDelay, m, false, h.node, s.target)})
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: "net.delay", ID: s.id + " " + item, Extra: d})
	}
	err := s.ClientStream.SendMsg(m)
	if err != nil {
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: s.id + " " + item + " failed"})
		return err
	}
	s.items++
	return nil
}

// RecvMsg is the ack, after CloseSend.
func (s *simClientStream) RecvMsg(m any) error {
	h, c := s.h, s.h.c
	err := s.ClientStream.RecvMsg(m)
	if c.Trace.Frozen() {
		return err
	}
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: s.id + " ack"})
	switch {
	case err == nil:
		if s.items > 1 {
			c.covered(func(cv *Coverage) { cv.BatchedWrites++ })
		}
		if !c.faults.on {
			h.linkEvent(s.link, "ack") // else below, unless the harness loses it
		}
	case status.Code(err) == codes.InvalidArgument:
		h.relayCall(relaypb.Relay_RelayStream_FullMethodName, s.target, true)
	}
	if err != nil || !c.faults.on {
		return err
	}
	if c.Net.Blocked(s.target, h.node) || c.netDraws(h.node+"|"+s.id+" ack").hit(drawDropResponse, c.faults.mix.DropResponse) {
		return s.broken("ack-lost", "ack")
	}
	c.breaks.count(s.link, true, c.Now())
	h.linkEvent(s.link, "ack")
	return nil
}

// broken cuts the stream as a lost connection would (why: the trace's
// reason) and records the fault on the link's path (sender, receiver): it
// delays the link's items until the writer has resent them. The harness
// counts the breaks of each link since its last ack came back, and when
// the first of them was: after as many breaks as a link has attempts, its
// writer may give its items up, and they arrive only with the next
// catch-up ("stream-giveup", a longer recovery) — but only if the link
// really was broken for the give-up budget, the back-offs a writer waits
// between its attempts (giveUpBudget). A writer that spent its attempts
// faster (new traffic woke it through its back-off) gave up a backlog a
// short blip should not cost: those breaks stay plain breaks, and the
// items are due again within the break's recovery.
func (s *simClientStream) broken(why, what string) error {
	h, c := s.h, s.h.c
	s.cancel()
	kind := model.FaultStreamBreak
	if n, first := c.breaks.count(s.link, false, c.Now()); n >= c.relayAttempts && c.Now()-first >= c.giveUpBudget {
		kind = model.FaultStreamGiveUp
	}
	c.inject(injection{node: h.node, what: fmt.Sprintf("%s %s %s", why, s.id, what), record: c.linkFault(kind, h.node, s.target)})
	h.linkEvent(s.link, "break")
	return status.Errorf(codes.Unavailable, "simulated %s on %s", why, s.id)
}

// linkEvent records what the harness saw happen to a relay stream link
// (model.CheckStreamBackoff). A crashed incarnation's links are not seen.
func (h *nodeHooks) linkEvent(link, what string) {
	if h.life.dead.Load() {
		return
	}
	h.c.rec.linkEvent(model.LinkEvent{Time: h.c.Now(), Link: link, What: what})
}

// linkBreaks counts each relay stream link's breaks since its last ack,
// and when the first of them came.
type linkBreaks struct {
	mu    sync.Mutex
	n     map[string]int
	first map[string]time.Duration
}

// count counts a break of link at now (acked: resets it at an ack that
// came back) and returns the breaks since the link's last ack and when
// the first of them was.
func (b *linkBreaks) count(link string, acked bool, now time.Duration) (int, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == nil {
		b.n, b.first = map[string]int{}, map[string]time.Duration{}
	}
	if acked {
		delete(b.n, link)
		delete(b.first, link)
		return 0, now
	}
	if b.n[link] == 0 {
		b.first[link] = now
	}
	b.n[link]++
	return b.n[link], b.first[link]
}

// serverRelayStream gates each item a relay stream's handler reads.
type serverRelayStream struct {
	grpc.ServerStream
	h  *nodeHooks
	id string
}

func (s *serverRelayStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	// Once the stream is cancelled (its sender broke it or went down),
	// whether the transport still hands over an item it had buffered or
	// the error races inside gRPC: the cancellation, which is settled by
	// the time the handler runs again, decides.
	if ctx := s.Context(); err == nil && ctx.Err() != nil {
		err = status.FromContextError(ctx.Err()).Err()
	}
	h := s.h
	it, _ := m.(*relaypb.RelayStreamItem)
	if err != nil || it == nil {
		h.c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCRecv, ID: s.id + " end"})
		return err
	}
	item := fmt.Sprintf("%s#%d #%d", it.GetMessage().GetRoom(), it.GetMessage().GetSeq(), it.LinkSeq)
	h.c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCRecv, ID: s.id + " " + item, Units: len(it.Recipients)})
	return nil
}

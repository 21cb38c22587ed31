package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
	open := c.fineStreamWrite(h.node, target)
	if open == nil || method != relaypb.Relay_RelayStream_FullMethodName {
		open = c.tCall(h.node, target)
	}
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCSend, ID: id, Touch: open})
	h.relayCall(method, target, false, system.Message{})
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
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " failed", Touch: c.tNode(h.node)})
		return nil, err
	}
	opened := c.fineStreamAck(h.node)
	if opened == nil || method != relaypb.Relay_RelayStream_FullMethodName {
		opened = c.tNode(h.node)
	}
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " open", Touch: opened})
	s.ClientStream = cs
	c.openStreams.add(streamKeyOf(link, attemptOf(ctx)), s)
	return s, nil
}

type simClientStream struct {
	grpc.ClientStream
	h      *nodeHooks
	id     string
	link   string // the link's operation label: "stream n1@1.2#0 ->n2"
	target string
	cancel context.CancelFunc
	items  int    // items written on the stream
	first  uint64 // the link seq of the first of them

	mu sync.Mutex
	// dead is set once the harness broke the stream (broken); cut is the
	// error its next operation returns when its receiver's side broke it
	// (cutAtDeliver).
	dead bool
	cut  error
}

// cutErr is the error of a stream its receiver's side broke, if any.
func (s *simClientStream) cutErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cut
}

func (s *simClientStream) SendMsg(m any) error {
	h, c := s.h, s.h.c
	it, _ := m.(*relaypb.RelayStreamItem)
	if it == nil || c.Trace.Frozen() {
		return s.ClientStream.SendMsg(m)
	}
	item := fmt.Sprintf("%s#%d #%d", it.GetMessage().GetRoom(), it.GetMessage().GetSeq(), it.LinkSeq)
	alias := msgAlias(system.Message{Sender: it.GetMessage().GetSender(), ID: it.GetMessage().GetMsgId()})
	touch := c.fineStreamWrite(h.node, s.target)
	if touch == nil {
		touch = c.tCall(h.node, s.target)
	}
	f := c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCSend, ID: s.id + " " + item, Alias: alias, Units: len(it.Recipients),
		Touch: touch, Faults: c.offer(ExDrop)})
	c.rec.relayed(it.GetMessage().GetRoom(), it.GetMessage().GetSeq(), s.target, len(it.Recipients))
	c.rec.linkItem(model.LinkItem{Time: c.Now(), From: h.node, To: s.target, Room: it.GetMessage().GetRoom(),
		Seq: it.GetMessage().GetSeq(), Recipients: len(it.Recipients)})
	if err := s.cutErr(); err != nil {
		return err
	}
	if f == ExDrop {
		return s.broken(string(model.FaultStreamBreak), item)
	}
	nd := c.netDraws(h.node + "|" + s.id + " " + item)
	switch {
	case c.Net.Blocked(h.node, s.target):
		return s.broken(string(model.FaultPartition), item)
	case nd.hit(drawDropRequest, c.faults.mix.DropRequest):
		return s.broken(string(model.FaultStreamBreak), item)
	}
	if nd.hit(drawDelay, c.faults.mix.Delay) {
		d := nd.delayBy()
		m := system.Message{Room: it.GetMessage().GetRoom(), Seq: it.GetMessage().GetSeq(), Sender: it.GetMessage().GetSender(), ID: it.GetMessage().GetMsgId()}
		c.inject(injection{node: h.node, what: fmt.Sprintf("%s %s %s by %v", model.FaultDelay, s.id, item, d),
			record: c.opFault(model.FaultDelay, m, false, h.node, s.target)})
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: "net.delay", ID: s.id + " " + item, Alias: alias, Extra: d})
	}
	err := s.ClientStream.SendMsg(m)
	if err != nil {
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: s.id + " " + item + " failed", Alias: alias, Touch: c.tNode(h.node)})
		if cut := s.cutErr(); cut != nil {
			return cut // the receiver's side broke it: not a race inside gRPC
		}
		return err
	}
	items, bound := c.backlog.written(h.node, s.target, s.linkName(), s.id, it.LinkSeq, c.Now(), c.Trace.Lines())
	c.coverage.linkBacklog(items, bound)
	if s.items == 0 {
		s.first = it.LinkSeq
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
	touch := c.tNode(h.node)
	if ack, ok := m.(*relaypb.RelayStreamAck); ok && err == nil && s.items > 0 && ack.Acked >= s.first && s.cutErr() == nil {
		if t := c.fineStreamAck(h.node); t != nil {
			touch = t
		}
	}
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: s.id + " ack", Touch: touch})
	if cut := s.cutErr(); cut != nil {
		return cut
	}
	switch {
	case err == nil:
		if s.items > 1 {
			c.covered(func(cv *Coverage) { cv.BatchedWrites++ })
		}
		if !c.faults.on {
			h.linkEvent(s.link, "ack") // else below, unless the harness loses it
		}
	case status.Code(err) == codes.InvalidArgument, status.Code(err) == codes.Unimplemented:
		// Refused: an item (a smaller limit), or the method (a peer that
		// no longer speaks v3, until the sender reads its new version).
		h.relayCall(relaypb.Relay_RelayStream_FullMethodName, s.target, true, system.Message{})
	}
	if err != nil {
		return err
	}
	if !c.faults.on {
		if ack, ok := m.(*relaypb.RelayStreamAck); ok {
			c.backlog.acked(s.linkName(), ack.Acked)
		}
		return nil
	}
	if c.faults.on && (c.Net.Blocked(s.target, h.node) || c.netDraws(h.node+"|"+s.id+" ack").hit(drawDropResponse, c.faults.mix.DropResponse)) {
		return s.broken("ack-lost", "ack")
	}
	if ack, ok := m.(*relaypb.RelayStreamAck); ok {
		c.backlog.acked(s.linkName(), ack.Acked)
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
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
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

// serverRelayStream gates each item a relay stream's handler reads. Its
// context is the call's, which the harness may also cancel itself
// (cutAtDeliver): the handler sees a cut stream at once, as it would a
// cancellation that had reached it.
type serverRelayStream struct {
	grpc.ServerStream
	h       *nodeHooks
	id      string
	attempt string // the sender's attempt (its stream count on the link): "a3"
	ctx     context.Context
	cancel  context.CancelFunc
	// from is the sending node, as the stream's items name their link
	// ("n1@1.2#0"), once an item arrived.
	from string
}

type serverRelayStreamKey struct{}

func newServerRelayStream(h *nodeHooks, ss grpc.ServerStream, id string) *serverRelayStream {
	s := &serverRelayStream{ServerStream: ss, h: h, id: id, attempt: "a1"}
	if md, ok := metadata.FromIncomingContext(ss.Context()); ok {
		if v := md.Get(system.MDAttempt); len(v) > 0 {
			s.attempt = "a" + v[0]
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.WithValue(ss.Context(), serverRelayStreamKey{}, s))
	return s
}

func (s *serverRelayStream) Context() context.Context { return s.ctx }

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
		touch := h.c.fineStreamEnd(h.node)
		if touch == nil {
			touch = h.c.tNode(h.node)
		}
		h.c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCRecv, ID: s.id + " end", Touch: h.c.withCallers(s.Context(), h.node, touch)})
		return err
	}
	item := fmt.Sprintf("%s#%d #%d", it.GetMessage().GetRoom(), it.GetMessage().GetSeq(), it.LinkSeq)
	alias := msgAlias(system.Message{Sender: it.GetMessage().GetSender(), ID: it.GetMessage().GetMsgId()})
	touch := h.c.fineStreamItem(h.node)
	if touch == nil {
		touch = h.c.tNode(h.node)
	}
	h.c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCRecv, ID: s.id + " " + item, Alias: alias, Units: len(it.Recipients), Touch: h.c.withCallers(s.Context(), h.node, touch)})
	if from, _, ok := strings.Cut(it.Link, "@"); ok {
		s.from = from
	}
	return nil
}

// streamKeyOf names a relay stream by its link and the sender's attempt:
// what the sender's and the receiver's side both know of it.
func streamKeyOf(linkLabel, attempt string) string {
	return linkNameOf(linkLabel) + " " + attempt
}

// linkNameOf is the link's name ("n1@1.2#0") in its operation label
// ("stream n1@1.2#0 ->n2"), or the name itself.
func linkNameOf(label string) string {
	label = strings.TrimPrefix(label, "stream ")
	if i := strings.Index(label, " ->"); i >= 0 {
		label = label[:i]
	}
	return label
}

func (s *simClientStream) linkName() string { return linkNameOf(s.link) }

// openStreams are the relay streams the nodes' writers opened, by
// streamKeyOf, for their receivers' side to break (cutAtDeliver). A
// stream stays until its link opens the next one.
type openStreams struct {
	mu sync.Mutex
	m  map[string]*simClientStream
}

func (o *openStreams) add(key string, s *simClientStream) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]*simClientStream{}
	}
	for k, old := range o.m {
		if old.link == s.link {
			delete(o.m, k) // one stream per link at a time
		}
	}
	o.m[key] = s
}

func (o *openStreams) get(key string) *simClientStream {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[key]
}

// cutAtDeliver is the recv-break fault, at a relay stream receiver's
// stream.deliver gate (p: the item read and claimed, not yet delivered):
// drawn per item from the seed's recv-break sub-seed, it breaks the
// stream there, as the sender's next write breaking or its watchdog
// firing would: the receiver's stream context is cancelled before the
// delivery goes on, and the sender's next operation on the stream fails
// (the writer resends what was not acknowledged on a new one). forced
// breaks it whatever the draw (the rapid machine's action).
func (h *nodeHooks) cutAtDeliver(ctx context.Context, p system.Point, forced bool) bool {
	c := h.c
	if c.Trace.Frozen() {
		return false
	}
	if !forced {
		if !c.faults.on || c.faults.mix.RecvBreak <= 0 {
			return false
		}
		key := h.node + "|" + p.Key
		k := c.faults.occurrence("recv-break|" + key)
		if !decide(c.seeds.faults.Derive(drawRecvBreak), c.faults.mix.RecvBreak, key, k) {
			return false
		}
	}
	rs, _ := ctx.Value(serverRelayStreamKey{}).(*serverRelayStream)
	if rs == nil {
		return false
	}
	link, _, _ := strings.Cut(p.Key, " #")
	cs := c.openStreams.get(link + " " + rs.attempt)
	if cs == nil {
		return false
	}
	cs.mu.Lock()
	if cs.dead || cs.cut != nil {
		cs.mu.Unlock()
		return false
	}
	cs.cut = status.Errorf(codes.Unavailable, "simulated %s on %s at %s", model.FaultRecvBreak, cs.id, p.Key)
	cs.mu.Unlock()
	rs.cancel()
	cs.cancel()
	kind := model.FaultRecvBreak
	if n, first := c.breaks.count(cs.link, false, c.Now()); n >= c.relayAttempts && c.Now()-first >= c.giveUpBudget {
		kind = model.FaultStreamGiveUp
	}
	c.coverage.recvBreak()
	c.inject(injection{node: h.node, what: fmt.Sprintf("%s %s at %s", model.FaultRecvBreak, cs.id, p.Key), record: c.linkFault(kind, cs.h.node, h.node)})
	return true
}

// BreakNextDelivery makes the next relay stream item that reaches its
// receiver's stream.deliver gate (read and claimed, not yet delivered)
// break its stream there, whatever the seed draws: the rapid machine's
// and the scenarios' recv-break. Call it from the bubble.
func (c *Cluster) BreakNextDelivery() {
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	c.forcedCuts++
}

// takeForcedCut consumes a break BreakNextDelivery asked for, if any.
func (c *Cluster) takeForcedCut() bool {
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	if c.forcedCuts == 0 {
		return false
	}
	c.forcedCuts--
	return true
}

// refused records a relay stream its receiver ended refusing an item
// (INVALID_ARGUMENT: a limit smaller than the sender's): as a
// stream-refused break of the link (sender, receiver) at the refusal. The
// sender learns of it only at its next write or its close for the ack
// (the linger), and relays the link's items again one by one then; the
// timely check lets that link's items be late by that much, the refused
// item itself being owed through the catch-up only (model/refused.go).
// What the harness reads is the status the receiver sent on the wire.
func (s *serverRelayStream) refused(err error) {
	h, c := s.h, s.h.c
	if status.Code(err) != codes.InvalidArgument || s.from == "" || c.Trace.Frozen() {
		return
	}
	c.Trace.Event(c.Now(), h.node, "%s %s from %s: %v", model.FaultStreamRefused, s.id, s.from, status.Code(err))
	c.rec.fault(*c.linkFault(model.FaultStreamRefused, s.from, h.node))
}

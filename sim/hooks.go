package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// nodeHooks is everything the simulation plugs into one node: the
// system.Hooks gates and observations, go-redis hooks, and gRPC
// interceptors on the node's server and on its calls to peers.
type nodeHooks struct {
	c       *Cluster
	node    string
	streams streamCounter
	tasks   taskCounter
	life    incarnationLife
	// onStop, when set, is called once, before the incarnation's first
	// Redis command of its stop (its deregistration): Replace starts an
	// overlapping successor then; stopLag holds the incarnation after
	// each Redis command of its stop.
	onStop  func()
	stopLag time.Duration
	// epoch is the incarnation's epoch, as Redis answered its INCR of the
	// node's epoch counter (registry.go).
	epoch atomic.Uint64
}

var (
	_ system.Hooks = (*nodeHooks)(nil)
	_ redis.Hook   = (*nodeHooks)(nil)
)

func (h *nodeHooks) Gate(ctx context.Context, p system.Point) {
	m := p.Msg
	if m.Room == "" {
		m, _ = system.MessageOf(ctx)
	}
	g := dst.GateSpec{Owner: h, Node: p.Node, Kind: p.Kind, ID: p.Key, Alias: msgAlias(m), Touch: h.c.withCallers(ctx, h.node, h.c.tPoint(h.node, p, system.Label(ctx)))}
	if p.Kind == system.PointStreamDeliver && h.c.budgeted(ExBreak) {
		// The explorer may break the stream here, at the receiver: that
		// cuts the sender's stream too, so the choice touches its node.
		g.Faults = []string{ExBreak}
		if sender, _, ok := strings.Cut(p.Key, "@"); ok {
			g.Touch = append(g.Touch, dst.W("node:"+sender))
		} else {
			g.Touch = nil // the sender unknown: everything
		}
	}
	f := h.c.Sched.Gate(g)
	// Counted once released: between gates only the released goroutine
	// touches shared state. A worker parked at its done gate still holds
	// its task (it takes no other before passing it).
	switch p.Kind {
	case system.PointTaskDone:
		h.c.rec.taskDone(&h.tasks)
	case system.PointTask:
		h.c.rec.taskStarted(&h.tasks, h.node, p.Msg, true, h.c.Now())
	case system.PointTaskCaller:
		h.c.rec.taskStarted(&h.tasks, h.node, p.Msg, false, h.c.Now()) // run by its submitter: not a worker
	case system.PointStreamDeliver:
		h.cutAtDeliver(ctx, p, f == ExBreak || h.c.takeForcedCut())
	}
}

func (h *nodeHooks) Observe(e any) {
	c := h.c
	if c.Trace.Frozen() {
		return // teardown: unscheduled, nothing may be recorded
	}
	if !h.observable(e) {
		return // a crashed incarnation: nothing it does is seen
	}
	switch e := e.(type) {
	case system.DispatchEvent:
		// For the reader of the trace only: the oracle counts tasks at the
		// executor's gates and derives what it expects itself.
		c.Trace.Event(c.Now(), e.Node, "dispatch %s#%d mode=%s members=%d local=%d tasks=%d%s",
			e.Room, e.Seq, e.Mode, len(e.Members), len(e.Local), e.Tasks, map[bool]string{true: " retry"}[e.Retry])
	case system.SessionEvent:
		if e.Open {
			c.Trace.Event(c.Now(), e.Node, "session.open %s", e.User)
			return
		}
		// The reason is not traced: at a crash, whether the node's shutdown
		// or the dropped stream closes a session first is a race that
		// changes nothing else.
		line := c.Trace.Event(c.Now(), e.Node, "session.closed %s", e.User)
		c.rec.event(model.Event{Time: c.Now(), Kind: model.KindSessionClosed, User: e.User, Node: e.Node, TraceLine: line})
	case system.PanicEvent:
		line := c.Trace.Event(c.Now(), e.Node, "task.panic %s: %s", e.Label, e.Value)
		c.rec.event(model.Event{Time: c.Now(), Kind: model.KindPanic, Node: e.Node, Err: e.Label + ": " + e.Value, TraceLine: line})
	case system.TaskEvent:
		c.Trace.Event(c.Now(), e.Node, "submit %s -> %s", e.Label, e.Placement)
	case system.RelayEvent:
		c.timers.relayed(e)
		c.Stats.Relays++
		res := "ok"
		if e.Err != nil {
			c.Stats.RelayErrors++
			res = "err=" + status.Code(e.Err).String()
		}
		mode := e.Mode
		if mode == "" {
			mode = map[bool]system.Mode{true: system.ModeBulk, false: system.ModeSingle}[e.Bulk]
		}
		if mode == system.ModeStream {
			res = map[bool]string{true: "queued", false: res}[e.Err == nil]
		}
		c.tell(e.Node, RelayCall{Mode: mode, Target: e.Target, Room: e.Room, Seq: e.Seq, Recipients: e.Recipients, Attempt: e.Attempt, Result: res})
	case system.StreamEvent:
		c.timers.stream(e)
		switch e.What {
		case "drop", "fallback", "isolate", "handover":
			// The writer starts its attempts afresh: so does the
			// harness's count of the link's breaks (it only ever makes
			// the give-up excuse narrower).
			c.breaks.count("stream "+e.Link+" ->"+e.Target, true, c.Now())
			h.linkEvent("stream "+e.Link+" ->"+e.Target, "reset")
		}
		res := ""
		switch {
		case e.Err != nil:
			res = " err=" + status.Code(e.Err).String()
		case e.What == "ack":
			res = fmt.Sprintf(" acked=%d", e.Acked)
		}
		c.tell(e.Node, StreamStep{What: e.What, Target: e.Target, Link: e.Link, Items: e.Items, Result: res})
	}
}

// --- go-redis ---

func (h *nodeHooks) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *nodeHooks) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		id := redisOpID(ctx, cmd.Name(), cmd.Args())
		if err := h.redisGate(ctx, id, redisUnits(cmd), cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		err := h.watchRegistry([]redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
		h.c.logReads.observe(h.node, cmd, h.c.Now())
		h.lagStop(ctx)
		return err
	}
}

func (h *nodeHooks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		name := "pipeline"
		var args []any
		if len(cmds) > 0 {
			name += "." + cmds[len(cmds)/2].Name()
			args = cmds[len(cmds)/2].Args()
		}
		id := redisOpID(ctx, name, args)
		if err := h.redisGate(ctx, id, len(cmds), cmds...); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		err := h.watchRegistry(cmds, func() error { return next(ctx, cmds) })
		h.lagStop(ctx)
		return err
	}
}

// redisOpID keys a command by the operation it belongs to and what it does.
func redisOpID(ctx context.Context, name string, args []any) string {
	key := ""
	for _, a := range args[min(1, len(args)):] {
		// The first key-like argument (a script's source is not one).
		if s, ok := a.(string); ok && strings.Contains(s, ":") && len(s) < 200 && !strings.ContainsAny(s, " \n") {
			key = s
			break
		}
	}
	label := system.Label(ctx)
	if label == "" {
		label = "?"
	}
	return fmt.Sprintf("%s %s %s", label, name, key)
}

// redisGate parks a Redis command of the incarnation made under ctx (units
// sizes it for the CPU model); afterwards it may fail it (an outage window
// or a drawn command error).
// lagStop holds an overlapping restart's stopping incarnation after each
// Redis command of its stop (see Cluster.Replace).
func (h *nodeHooks) lagStop(ctx context.Context) {
	if h.stopLag > 0 && system.Label(ctx) == "stop "+h.node {
		time.Sleep(h.stopLag)
	}
}

func (h *nodeHooks) redisGate(ctx context.Context, id string, units int, cmds ...redis.Cmder) error {
	c, node := h.c, h.node
	if h.onStop != nil && system.Label(ctx) == "stop "+node {
		f := h.onStop
		h.onStop = nil
		f()
	}
	mctx, _ := system.MessageOf(ctx)
	f := c.Sched.Gate(dst.GateSpec{Owner: h, Node: node, Kind: KindRedis, ID: id, Tie: callTie(ctx), Alias: msgAlias(mctx), Extra: c.faults.spike(c.Now()), Units: units,
		Touch: c.withCallers(ctx, node, c.tRedis(ctx, node, cmds)), Faults: c.offer(ExError)})
	c.redisClock()
	if c.Trace.Frozen() {
		return nil
	}
	if f == ExError {
		m, _ := system.MessageOf(ctx)
		c.exploreFault(model.FaultRedisError, node, id, m, true)
		return errors.New("simulated redis error")
	}
	if c.faults.redisDown(c.Now()) {
		m, _ := system.MessageOf(ctx)
		c.inject(injection{node: node, what: string(model.FaultRedisOutage) + " " + id, effect: true,
			record: c.opFault(model.FaultRedisOutage, m, true, node)})
		return errors.New("simulated redis outage")
	}
	// The occurrence count only matters to a draw that can succeed: with
	// no Redis errors in the mix, or faults over for good (the liveness
	// phase), counting would only grow a map by one key per command.
	if c.faults.mix.RedisError <= 0 || !c.faults.on {
		return nil
	}
	k := c.faults.occurrence("redis|" + node + "|" + id)
	if decide(c.seeds.faults.Derive("redis"), c.faults.mix.RedisError, node+"|"+id, k) {
		m, _ := system.MessageOf(ctx)
		c.inject(injection{node: node, what: string(model.FaultRedisError) + " " + id,
			record: c.opFault(model.FaultRedisError, m, true, node)})
		return errors.New("simulated redis error")
	}
	return nil
}

// redisClock sets miniredis' clock to the virtual time truncated to the
// millisecond, just before a command runs. With ClockTTL, miniredis ages
// every TTL whenever its clock moved since the last command, and each such
// tick sorts all keys (RedisDB.fastForward -> allKeys): with one idempotency
// key per message that was 76% of the CPU of the Axis B 50 msg/s run and
// ~12% of the default run, as gated latencies put nearly every command at
// a new microsecond. A millisecond clock ticks at most once per virtual ms,
// which is also real Redis' resolution (expiry is an absolute ms time), so
// expiry moves by less than 1 ms and no trace hash we checked changed.
func (c *Cluster) redisClock() {
	c.Redis.SetTime(c.Sched.Origin().Add(c.Now().Truncate(time.Millisecond)))
}

// --- gRPC ---

const (
	mdDup = "x-sim-dup"
)

// GRPCReadBuffer is the read buffer of every gRPC transport of the
// simulation (gRPC's default is 32 KiB, allocated per connection and
// side: ~30 MB with 150 users). Reads over the in-memory pipes are
// function calls; a smaller buffer only means more of them.
const GRPCReadBuffer = 4 << 10

func (h *nodeHooks) serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.StatsHandler(&h.streams),
		grpc.ReadBufferSize(GRPCReadBuffer),
		grpc.ChainUnaryInterceptor(h.serverUnary),
		grpc.ChainStreamInterceptor(h.serverStream),
	}
}

func (h *nodeHooks) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(h.peerUnary),
		grpc.WithChainStreamInterceptor(h.peerStream),
		grpc.WithConnectParams(deterministicConnect),
		grpc.WithReadBufferSize(GRPCReadBuffer),
	}
}

// msgAlias is the scheduler's alias (dst.GateSpec.Alias) of an op working
// for m: its sender and client message id. Two messages Redis gave one
// seq after it lost writes (a rewind, a failover) have ops whose ids,
// which name the message by room and seq, are equal while both are in
// flight.
func msgAlias(m system.Message) string {
	if m.ID == "" {
		return ""
	}
	return m.Sender + " " + m.ID
}

// callTie tells apart the Redis commands of calls whose labels are the
// same: the system labels a request's commands by what it asks ("join r1
// u1"), so a client that repeats a request while the first is still held
// (its node paused, the first call timed out) has two handlers parked on
// the same command at once. The incoming call's operation, attempt and
// duplicate marker are the call's own; "" outside a call.
func callTie(ctx context.Context) string {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok || len(md.Get(system.MDOp)) == 0 {
		return ""
	}
	return callID(ctx, "")
}

// callID names an incoming call from its metadata: the caller's operation
// label, attempt and duplicate marker.
func callID(ctx context.Context, method string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	get := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	id := shortMethod(method) + " " + get(system.MDOp)
	if a := get(system.MDAttempt); a != "" && a != "1" {
		id += " a" + a
	}
	if d := get(mdDup); d != "" {
		id += " dup" + d
	}
	return id
}

func shortMethod(m string) string { return m[strings.LastIndexByte(m, '/')+1:] }

// serverUnary parks an arriving call (the network hop's latency is applied
// here) and labels the handler's work with the call's identity.
func (h *nodeHooks) serverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	id := callID(ctx, info.FullMethod)
	m, relayed := relayedOf(req)
	touch := h.c.fineRecv(h.node, info.FullMethod, id)
	if touch == nil {
		touch = h.c.tNode(h.node)
	}
	touch = h.c.withCallers(ctx, h.node, touch)
	g := dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCRecv, ID: id, Alias: msgAlias(m), Units: recipientsOf(req), Touch: touch}
	if relayed {
		g.FaultDelay = h.c.exploreDelay() // held past the caller's timeout
	} else if strings.HasPrefix(info.FullMethod, "/"+relaypb.Chat_ServiceDesc.ServiceName+"/") {
		g.Faults = h.c.budgetedOf(ExClientDrop, ExClientLose, ExClientDup)
	}
	f := h.c.Sched.Gate(g)
	switch f {
	case ExDelay:
		h.c.exploreFault(model.FaultDelay, h.node, id, m, false)
	case ExClientDrop:
		// The client's request is lost on its way in: the handler never
		// runs, and the client's deadline ends the call.
		h.c.exploreFault(model.FaultDropRequest, h.node, id, m, false)
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case ExClientDup:
		// The request arrives twice: a copy runs beside it, to its end,
		// and its answer goes nowhere.
		h.c.exploreFault(model.FaultDuplicate, h.node, id, m, false)
		md, _ := metadata.FromIncomingContext(ctx)
		md = md.Copy()
		md.Set(mdDup, "1")
		dctx, cancel := context.WithTimeout(metadata.NewIncomingContext(context.WithoutCancel(ctx), md), ClientTimeout)
		dctx = system.WithLabel(dctx, "recv "+id+" dup1")
		go func() {
			defer cancel()
			_, _ = handler(dctx, req)
		}()
	}
	ctx = system.WithLabel(ctx, "recv "+id)
	if relayed {
		ctx = system.WithMessage(ctx, m) // the handler's Redis commands work for it
		if h.c.fine {
			ctx = withRecipients(ctx, req) // their footprints name the sessions (finenode.go)
		}
	}
	resp, err := handler(ctx, req)
	if f == ExClientLose && err == nil {
		// The handler acted; its answer is lost on the way back.
		h.c.exploreFault(model.FaultDropResponse, h.node, id, m, false)
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return resp, err
}

func (h *nodeHooks) serverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	id := callID(ss.Context(), info.FullMethod)
	touch := h.c.fineRecv(h.node, info.FullMethod, id)
	if touch == nil {
		touch = h.c.tNode(h.node)
	}
	touch = h.c.withCallers(ss.Context(), h.node, touch)
	h.c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCRecv, ID: id, Touch: touch})
	if info.FullMethod == relaypb.Relay_RelayStream_FullMethodName {
		rs := newServerRelayStream(h, ss, id)
		err := handler(srv, rs)
		rs.refused(err)
		return err
	}
	return handler(srv, ss)
}

// peerUnary wraps a node's relay call to a peer with the network faults:
// partitions and dropped requests never reach the peer; a dropped response
// reaches it and is lost on the way back; a duplicate reaches it twice. The
// caller sees a lost message as its deadline expiring.
func (h *nodeHooks) peerUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c := h.c
	if c.Trace.Frozen() {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	target := strings.TrimPrefix(cc.Target(), "passthrough:///")
	id := shortMethod(method) + " " + system.Label(ctx) + " ->" + target
	key := h.node + "|" + id + "|" + attemptOf(ctx)
	// A retry may wake from its back-off timer at the same instant as
	// others: park before any fault decision or trace line.
	m, _ := system.MessageOf(ctx)
	alias := msgAlias(m)
	touch := c.fineCall(h.node, target, method)
	if touch == nil {
		touch = c.tCall(h.node, target)
	}
	f := c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCSend, ID: id + " " + attemptOf(ctx), Alias: alias, Units: recipientsOf(req),
		Touch: touch, Faults: c.offer(ExDrop, ExLose)})
	h.relayCall(method, target, false, m)
	if m, ok := relayedOf(req); ok {
		c.rec.relayed(m.Room, m.Seq, target, recipientsOf(req))
	}
	nd := c.netDraws(key)
	mix := c.faults.mix
	switch {
	case c.Net.Blocked(h.node, target):
		return h.lost(ctx, model.FaultPartition, id, target)
	case f == ExDrop, nd.hit(drawDropRequest, mix.DropRequest):
		return h.lost(ctx, model.FaultDropRequest, id, target)
	}
	if nd.hit(drawDelay, mix.Delay) {
		d := nd.delayBy()
		c.inject(injection{node: h.node, what: fmt.Sprintf("%s %s by %v", model.FaultDelay, id, d),
			record: c.opFault(model.FaultDelay, m, false, h.node, target)})
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: "net.delay", ID: id + " " + attemptOf(ctx), Alias: alias, Extra: d})
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	// The response wakes this goroutine outside the scheduler: park before
	// touching shared state or the trace. A call that succeeded, with no
	// fault to follow here, goes back to its relay (finenode.go).
	done := c.fineCallDone(h.node, method, err == nil && f == "" && mix.Duplicate <= 0 && mix.DropResponse <= 0 && !c.Net.Blocked(target, h.node))
	if done == nil {
		done = c.tNode(h.node)
	}
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " " + attemptOf(ctx), Alias: alias, Touch: done})
	if err == nil && f == ExLose {
		return h.lost(ctx, model.FaultDropResponse, id, target)
	}
	if err == nil && nd.hit(drawDuplicate, mix.Duplicate) {
		c.inject(injection{node: h.node, what: string(model.FaultDuplicate) + " " + id,
			record: c.opFault(model.FaultDuplicate, m, false, h.node, target)})
		dctx := metadata.AppendToOutgoingContext(ctx, mdDup, "1")
		_ = invoker(dctx, method, req, newReply(req), cc, opts...)
		c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " " + attemptOf(ctx) + " dup", Alias: alias, Touch: c.tNode(h.node)})
	}
	if c.faults.on && err == nil && (c.Net.Blocked(target, h.node) || nd.hit(drawDropResponse, mix.DropResponse)) {
		return h.lost(ctx, model.FaultDropResponse, id, target)
	}
	return err
}

// relayModes maps the relay methods to the mode each is (CheckRelayMode).
var relayModes = map[string]system.Mode{
	relaypb.Relay_RelayMessage_FullMethodName:     system.ModeSingle,
	relaypb.Relay_RelayBulkMessage_FullMethodName: system.ModeBulk,
	relaypb.Relay_RelayStream_FullMethodName:      system.ModeStream,
}

// relayCall records a relay call of method to target as it leaves the
// node (refused: a relay stream the receiver ended with InvalidArgument),
// for CheckRelayMode: the method is what goes on the wire, whatever the
// relay says of its mode. A crashed incarnation's calls are not seen.
func (h *nodeHooks) relayCall(method, target string, refused bool, m system.Message) {
	mode, ok := relayModes[method]
	if !ok || h.life.dead.Load() {
		return
	}
	h.c.rec.relay(model.RelayCall{Time: h.c.Now(), From: h.node, To: target, Mode: string(mode), Refused: refused, Msg: msgName(m)})
}

// lost makes a call fail the way a lost message does: nothing comes back
// and the caller's deadline expires.
func (h *nodeHooks) lost(ctx context.Context, why model.FaultKind, id, target string) error {
	c := h.c
	m, _ := system.MessageOf(ctx)
	c.inject(injection{node: h.node, what: string(why) + " " + id, record: c.opFault(why, m, false, h.node, target)})
	waited := c.timers.deadline()
	<-ctx.Done()
	waited()
	c.Sched.Gate(dst.GateSpec{Owner: h, Node: h.node, Kind: KindRPCDone, ID: id + " " + attemptOf(ctx) + " lost", Alias: msgAlias(m), Touch: c.tNode(h.node)})
	return status.FromContextError(ctx.Err()).Err()
}

func attemptOf(ctx context.Context) string {
	md, _ := metadata.FromOutgoingContext(ctx)
	if v := md.Get(system.MDAttempt); len(v) > 0 {
		return "a" + v[0]
	}
	return "a1"
}

// relayedOf names the message a relay call carries.
func relayedOf(req any) (system.Message, bool) {
	var m *relaypb.RelayedMessage
	switch r := req.(type) {
	case *relaypb.RelayBulkMessageRequest:
		m = r.GetMessage()
	case *relaypb.RelayMessageRequest:
		m = r.GetMessage()
	}
	if m == nil {
		return system.Message{}, false
	}
	return system.Message{Room: m.GetRoom(), Seq: m.GetSeq(), Sender: m.GetSender(), ID: m.GetMsgId()}, true
}

func newReply(req any) any {
	switch req.(type) {
	case *relaypb.RelayMessageRequest, *relaypb.RelayBulkMessageRequest:
		return &relaypb.RelayMessageResponse{}
	}
	return nil
}

package floorbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst/memnet"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// The floor of the default run: the Redis commands and gRPC calls, stream
// messages and connections that a default run's nodes really served,
// recorded from the run and replayed in real time with no simulation (no
// bubble, scheduler, gates, trace, faults or checks). The Redis commands go
// through go-redis to a fresh miniredis over its in-memory pipe, as in the
// simulation; the gRPC work goes through the gRPC stack over the
// simulation's in-memory listener (pipe.go, bufconn's semantics) to stub
// nodes that answer what the real nodes answered. A default run cannot cost
// less CPU than its floor without changing what it does.
//
//	go test ./sim/floorbench/ -run '^$' -bench DefaultFloor -benchtime=1x -v
//	go test ./sim/floorbench/ -run '^$' -bench DefaultFloor -benchtime=1x -cpu 1
//	go test ./sim/floorbench/ -run '^$' -bench DefaultFloor -benchtime=1x -floor.ttl=false
//	go test ./sim/floorbench/ -run '^$' -bench FloorUnit -benchtime=2000x
//
// BenchmarkDefaultFloor runs seeds 1..5 of sim.DefaultConfig per iteration in
// each mode. Every seed is run twice in the simulation: once with the
// recorder (not measured) and once without it (measured, and its trace
// hash must be the recorded run's). The replay is in lockstep (one call or
// message at a time, in the recorded order), as traffic at the default
// run's rates would be served in real time: nothing is batched that the
// run did not batch.

var floorTTL = flag.Bool("floor.ttl", true, "BenchmarkDefaultFloor: the Redis replay ages TTLs with the run's clock, as the simulation does")

// --- recording ---

// floorOpKind is one step of a replay.
type floorOpKind int

const (
	opUnary floorOpKind = iota // a unary call, request and answer
	opOpen                     // a stream opened (its request, for Connect)
	opSend                     // a message the node sent on a stream (a delivery)
	opRecv                     // a message the node received on a stream (a relay item)
	opEnd                      // a stream ended (its ack, for RelayStream)
)

// floorOp is a recorded gRPC step, on the server side of a node.
type floorOp struct {
	kind     floorOpKind
	node     string
	conn     int // the server connection (one replayed client connection each)
	call     int
	method   string
	md       metadata.MD // the caller's metadata (no pseudo or grpc- headers)
	deadline bool
	header   metadata.MD   // opOpen: the node's response header
	msg      proto.Message // opUnary, opOpen: the request; opSend, opRecv: the message
	resp     proto.Message // opUnary, opEnd: the response
	err      error         // opUnary, opEnd: the call's status
}

// floorRedis is a recorded Redis command, or pipeline (tx: MULTI ... EXEC,
// which cmds leave out).
type floorRedis struct {
	node, label string
	at          time.Time // the bubble's (virtual) clock when it was sent
	cmds        [][]any
	pipe, tx    bool
	errs        []string // per command: "", "nil" (redis.Nil) or the error's first word
	// flush marks the fault injector's route-flush (Cluster.FlushRoutes:
	// the harness deletes the route keys in miniredis directly), not a
	// command.
	flush bool
}

// floorLog is what a run's nodes did.
type floorLog struct {
	mu      sync.Mutex
	redis   []*floorRedis
	ops     []*floorOp
	conns   int
	calls   int
	skipped map[string]int // calls of methods the replay does not know
}

func newFloorLog() *floorLog { return &floorLog{skipped: map[string]int{}} }

// node is the recorder of one node (sim.Config.RecordNode).
func (l *floorLog) node(node string) (redis.Hook, []grpc.ServerOption) {
	return floorRedisHook{l: l, node: node}, []grpc.ServerOption{grpc.StatsHandler(&floorStats{l: l, node: node})}
}

func redisErrClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, redis.Nil):
		return "nil"
	}
	s := err.Error()
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	return s
}

type floorRedisHook struct {
	l    *floorLog
	node string
}

func (h floorRedisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h floorRedisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r := &floorRedis{node: h.node, label: system.Label(ctx), at: time.Now(), cmds: [][]any{slices.Clone(cmd.Args())}}
		h.l.mu.Lock()
		h.l.redis = append(h.l.redis, r)
		h.l.mu.Unlock()
		err := next(ctx, cmd)
		// go-redis sets a command's error after the hooks: at this point
		// only next's result has it.
		r.errs = []string{redisErrClass(err)}
		return err
	}
}

func (h floorRedisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		inner := cmds
		tx := len(cmds) >= 2 && cmds[0].Name() == "multi" && cmds[len(cmds)-1].Name() == "exec"
		if tx {
			inner = cmds[1 : len(cmds)-1]
		}
		r := &floorRedis{node: h.node, label: system.Label(ctx), at: time.Now(), pipe: true, tx: tx}
		for _, c := range inner {
			r.cmds = append(r.cmds, slices.Clone(c.Args()))
		}
		h.l.mu.Lock()
		h.l.redis = append(h.l.redis, r)
		h.l.mu.Unlock()
		err := next(ctx, cmds)
		for _, c := range inner {
			r.errs = append(r.errs, redisErrClass(c.Err()))
		}
		return err
	}
}

// floorStats is a node's gRPC stats handler: it sees every connection,
// call and message on the node's server, including calls the node's own
// interceptors reject.
type floorStats struct {
	l    *floorLog
	node string
}

type floorConnKey struct{}
type floorCallKey struct{}

// floorCall is a call in progress.
type floorCall struct {
	id, conn         int
	method           string
	md, header       metadata.MD
	deadline         bool
	cstream, sstream bool
	req, resp        proto.Message
	opened           bool
}

func (s *floorStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	s.l.mu.Lock()
	s.l.conns++
	id := s.l.conns
	s.l.mu.Unlock()
	return context.WithValue(ctx, floorConnKey{}, id)
}

func (s *floorStats) HandleConn(context.Context, stats.ConnStats) {}

func (s *floorStats) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	conn, ok := ctx.Value(floorConnKey{}).(int)
	if !ok {
		panic("floor recorder: a call's context does not carry its connection")
	}
	s.l.mu.Lock()
	s.l.calls++
	c := &floorCall{id: s.l.calls, conn: conn, method: info.FullMethodName}
	s.l.mu.Unlock()
	return context.WithValue(ctx, floorCallKey{}, c)
}

// replayMD is md without what gRPC sets itself.
func replayMD(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent" || k == "te" {
			continue
		}
		out[k] = slices.Clone(v)
	}
	return out
}

func cloneMsg(p any) proto.Message {
	if m, ok := p.(proto.Message); ok {
		return proto.Clone(m)
	}
	return nil
}

func (s *floorStats) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	c, _ := ctx.Value(floorCallKey{}).(*floorCall)
	if c == nil {
		return
	}
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := floorMethods[c.method]; !ok {
		if _, end := rs.(*stats.End); end {
			l.skipped[c.method]++
		}
		return
	}
	op := func(kind floorOpKind) *floorOp {
		o := &floorOp{kind: kind, node: s.node, conn: c.conn, call: c.id, method: c.method, md: c.md, deadline: c.deadline}
		l.ops = append(l.ops, o)
		return o
	}
	open := func() {
		if !c.opened {
			c.opened = true
			o := op(opOpen)
			o.msg, o.header = c.req, c.header
		}
	}
	switch e := rs.(type) {
	case *stats.InHeader:
		c.md = replayMD(e.Header)
		_, c.deadline = ctx.Deadline()
	case *stats.Begin:
		c.cstream, c.sstream = e.IsClientStream, e.IsServerStream
		if c.cstream {
			open()
		}
	case *stats.InPayload:
		switch {
		case c.cstream:
			op(opRecv).msg = cloneMsg(e.Payload)
		default:
			c.req = cloneMsg(e.Payload)
		}
	case *stats.OutHeader:
		c.header = replayMD(e.Header)
		if c.sstream {
			open()
		}
	case *stats.OutPayload:
		switch {
		case c.sstream:
			open()
			op(opSend).msg = cloneMsg(e.Payload)
		default:
			c.resp = cloneMsg(e.Payload)
		}
	case *stats.End:
		if c.cstream || c.sstream {
			open()
			o := op(opEnd)
			o.resp, o.err = c.resp, e.Error
			return
		}
		o := op(opUnary)
		o.msg, o.resp, o.err = c.req, c.resp, e.Error
	}
}

// floorMethod is what the replay needs of a method.
type floorMethod struct {
	req, resp func() proto.Message
	desc      *grpc.StreamDesc // streams only
}

var floorMethods = map[string]floorMethod{
	relaypb.Chat_Send_FullMethodName:       {func() proto.Message { return &relaypb.SendRequest{} }, func() proto.Message { return &relaypb.SendResponse{} }, nil},
	relaypb.Chat_CreateRoom_FullMethodName: {func() proto.Message { return &relaypb.CreateRoomRequest{} }, func() proto.Message { return &relaypb.CreateRoomResponse{} }, nil},
	relaypb.Chat_Join_FullMethodName:       {func() proto.Message { return &relaypb.JoinRequest{} }, func() proto.Message { return &relaypb.JoinResponse{} }, nil},
	relaypb.Chat_Leave_FullMethodName:      {func() proto.Message { return &relaypb.LeaveRequest{} }, func() proto.Message { return &relaypb.LeaveResponse{} }, nil},
	relaypb.Chat_Connect_FullMethodName: {func() proto.Message { return &relaypb.ConnectRequest{} }, func() proto.Message { return &relaypb.Delivery{} },
		streamDesc(relaypb.Chat_ServiceDesc, "Connect")},
	relaypb.Relay_RelayMessage_FullMethodName:     {func() proto.Message { return &relaypb.RelayMessageRequest{} }, func() proto.Message { return &relaypb.RelayMessageResponse{} }, nil},
	relaypb.Relay_RelayBulkMessage_FullMethodName: {func() proto.Message { return &relaypb.RelayBulkMessageRequest{} }, func() proto.Message { return &relaypb.RelayMessageResponse{} }, nil},
	relaypb.Relay_RelayStream_FullMethodName: {func() proto.Message { return &relaypb.RelayStreamItem{} }, func() proto.Message { return &relaypb.RelayStreamAck{} },
		streamDesc(relaypb.Relay_ServiceDesc, "RelayStream")},
}

func streamDesc(sd grpc.ServiceDesc, name string) *grpc.StreamDesc {
	for i := range sd.Streams {
		if sd.Streams[i].StreamName == name {
			return &sd.Streams[i]
		}
	}
	panic("no stream " + name)
}

// record runs cfg once with the recorder and returns its log.
func recordRun(b *testing.B, cfg sim.Config) (*floorLog, *sim.Result) {
	b.Helper()
	l := newFloorLog()
	cfg.RecordNode = l.node
	cfg.OnRelease = func(op *sim.Op, _ time.Duration) {
		if op.Kind == sim.KindChaos && strings.HasSuffix(op.ID, " route-flush") {
			l.mu.Lock()
			l.redis = append(l.redis, &floorRedis{flush: true})
			l.mu.Unlock()
		}
	}
	res := sim.BenchRun(b, cfg)
	return l, res
}

// --- counts ---

// floorCounts is what a log holds, summed over runs.
type floorCounts struct {
	runs                                        int
	redisByName                                 map[string]int
	redisCalls, pipelines, noscript             int
	unary                                       map[string]int
	unaryReqB, unaryRespB                       map[string]int
	opens                                       map[string]int
	deliveries, deliveryB, items, conns         int
	simDeliveries, simRelays, simSentOK         int
	skipped                                     map[string]int
	redisMismatch, grpcMismatch, redisClientErr int
	flushes                                     int
}

func (fc *floorCounts) add(l *floorLog, res *sim.Result) {
	if fc.redisByName == nil {
		fc.redisByName, fc.unary, fc.unaryReqB, fc.unaryRespB, fc.opens, fc.skipped = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	}
	fc.runs++
	for _, r := range l.redis {
		if r.flush {
			fc.flushes++
			continue
		}
		fc.redisCalls++
		if r.pipe {
			fc.pipelines++
			if r.tx {
				fc.redisByName["multi"]++
				fc.redisByName["exec"]++
			}
		}
		if !r.pipe && clientSideErr(r.errs[0]) {
			fc.redisClientErr++
			continue
		}
		for i, c := range r.cmds {
			fc.redisByName[strings.ToLower(fmt.Sprint(c[0]))]++
			if r.errs[i] == "NOSCRIPT" {
				fc.noscript++
			}
		}
	}
	for _, o := range l.ops {
		m := path.Base(o.method)
		switch o.kind {
		case opUnary:
			fc.unary[m]++
			fc.unaryReqB[m] += proto.Size(o.msg)
			fc.unaryRespB[m] += proto.Size(o.resp)
		case opOpen:
			fc.opens[m]++
		case opSend:
			fc.deliveries++
			fc.deliveryB += proto.Size(o.msg)
		case opRecv:
			fc.items++
		}
	}
	fc.conns += l.conns
	maps.Copy(fc.skipped, l.skipped)
	fc.simDeliveries += res.Stats.Deliveries
	fc.simRelays += res.Stats.Relays
	fc.simSentOK += res.Stats.SendsOK
}

func (fc *floorCounts) log(b *testing.B) {
	n := float64(fc.runs)
	var sb strings.Builder
	fmt.Fprintf(&sb, "per run (mean of %d): sim stats: %.1f sends ok, %.1f deliveries, %.1f relays\n", fc.runs, float64(fc.simSentOK)/n, float64(fc.simDeliveries)/n, float64(fc.simRelays)/n)
	total := 0
	for _, v := range fc.redisByName {
		total += v
	}
	fmt.Fprintf(&sb, "  redis: %.1f commands replayed (%.1f round trips, %.1f of them pipelines; NOSCRIPT %.1f; %.1f more failed in the run's client, not replayed):",
		float64(total)/n, float64(fc.redisCalls-fc.redisClientErr)/n, float64(fc.pipelines)/n, float64(fc.noscript)/n, float64(fc.redisClientErr)/n)
	names := slices.Sorted(maps.Keys(fc.redisByName))
	sort.SliceStable(names, func(i, j int) bool { return fc.redisByName[names[i]] > fc.redisByName[names[j]] })
	for _, k := range names {
		fmt.Fprintf(&sb, " %s=%.1f", k, float64(fc.redisByName[k])/n)
	}
	sb.WriteString("\n  grpc unary:")
	for _, k := range slices.Sorted(maps.Keys(fc.unary)) {
		fmt.Fprintf(&sb, " %s=%.1f (req %dB resp %dB avg)", k, float64(fc.unary[k])/n, fc.unaryReqB[k]/fc.unary[k], fc.unaryRespB[k]/fc.unary[k])
	}
	sb.WriteString("\n  grpc streams opened:")
	for _, k := range slices.Sorted(maps.Keys(fc.opens)) {
		fmt.Fprintf(&sb, " %s=%.1f", k, float64(fc.opens[k])/n)
	}
	fmt.Fprintf(&sb, "; stream deliveries sent %.1f (%.0fB avg); relay stream items %.1f; server connections %.1f",
		float64(fc.deliveries)/n, float64(fc.deliveryB)/max(1, float64(fc.deliveries)), float64(fc.items)/n, float64(fc.conns)/n)
	if len(fc.skipped) > 0 {
		fmt.Fprintf(&sb, "\n  not replayed (unknown methods): %v", fc.skipped)
	}
	fmt.Fprintf(&sb, "\n  route flushes (a fault: the harness deletes the route keys; replayed as such) %.1f", float64(fc.flushes)/n)
	fmt.Fprintf(&sb, "\n  replay mismatches (outcome differs from the run's), total: redis %d, grpc %d", fc.redisMismatch, fc.grpcMismatch)
	b.Log(sb.String())
}

// --- replay: Redis ---

// clientSideErr tells a command that failed in go-redis rather than in
// Redis (its caller's context ended, the client was closed): the replay
// skips it, as it may never have been sent.
func clientSideErr(class string) bool {
	return class == "context" || strings.HasPrefix(class, "redis:") || class == "EOF" || strings.HasPrefix(class, "io:")
}

// replayRedis runs the log's Redis commands, in order, through one go-redis
// client per node (the simulation's options) against a fresh miniredis,
// and returns how many commands' outcomes differ from the run's. With
// scripts set, it also adds up the CPU time of the script calls (EVAL,
// EVALSHA), measured around each one (a separate pass: the measuring costs
// a little).
func replayRedis(b *testing.B, l *floorLog, scripts *time.Duration) (mismatch int) {
	m := miniredis.NewMiniRedis()
	defer m.Close()
	// Keys expire as they did in the run: miniredis' clock follows the
	// run's virtual clock to the millisecond (as redisClock sets it).
	// -floor.ttl=false leaves the clock alone (no key ever expires; the
	// outcome of a GET of an expired route then differs from the run's).
	m.ClockTTL(*floorTTL)
	opts := sim.RedisOptions(m)
	clients := map[string]*redis.Client{}
	ctx := context.Background()
	for _, r := range l.redis {
		if r.flush {
			sim.FlushRoutes(m)
			continue
		}
		if *floorTTL {
			m.SetTime(r.at.Truncate(time.Millisecond))
		}
		rdb := clients[r.node]
		if rdb == nil {
			o := *opts
			rdb = redis.NewClient(&o)
			clients[r.node] = rdb
		}
		if !r.pipe && clientSideErr(r.errs[0]) {
			continue // failed in the run's client: it may never have reached Redis
		}
		var cmds []*redis.Cmd
		if !r.pipe {
			name := strings.ToLower(fmt.Sprint(r.cmds[0][0]))
			if scripts != nil && (name == "evalsha" || name == "eval") {
				c0 := cpuNow()
				cmds = append(cmds, rdb.Do(ctx, r.cmds[0]...))
				*scripts += cpuNow() - c0
			} else {
				cmds = append(cmds, rdb.Do(ctx, r.cmds[0]...))
			}
		} else {
			var p redis.Pipeliner
			if r.tx {
				p = rdb.TxPipeline()
			} else {
				p = rdb.Pipeline()
			}
			for _, c := range r.cmds {
				cmds = append(cmds, p.Do(ctx, c...))
			}
			_, _ = p.Exec(ctx)
		}
		for i, c := range cmds {
			if redisErrClass(c.Err()) != r.errs[i] {
				mismatch++
				if mismatch <= 3 {
					b.Logf("redis replay: %v gave %q, the run %q", r.cmds[i][:min(3, len(r.cmds[i]))], redisErrClass(c.Err()), r.errs[i])
				}
			}
		}
	}
	for _, c := range clients {
		_ = c.Close()
	}
	return mismatch
}

// --- replay: gRPC ---

// stubNode answers every call with what the handing driver tells it (the
// recorded answer): a node cut down to its gRPC surface, like floorNode.
type stubNode struct {
	relaypb.UnimplementedChatServer
	relaypb.UnimplementedRelayServer
	replies chan stubReply
	opens   chan *stubStream
}

type stubReply struct {
	msg proto.Message
	err error
}

// stubStream is a stream's server side: the driver pushes a Connect
// stream's messages on out (closed at its end), and is told of each
// RelayStream item on got.
type stubStream struct {
	header  metadata.MD
	out     chan proto.Message
	got     chan struct{}
	ack     proto.Message
	err     error
	started chan struct{}
	done    chan struct{}
}

func newStubNode() *stubNode {
	return &stubNode{replies: make(chan stubReply, 1), opens: make(chan *stubStream, 1)}
}

func stubAnswer[T proto.Message](n *stubNode) (T, error) {
	r := <-n.replies
	if r.err != nil {
		var zero T
		return zero, r.err
	}
	return r.msg.(T), nil
}

func (n *stubNode) Send(context.Context, *relaypb.SendRequest) (*relaypb.SendResponse, error) {
	return stubAnswer[*relaypb.SendResponse](n)
}
func (n *stubNode) CreateRoom(context.Context, *relaypb.CreateRoomRequest) (*relaypb.CreateRoomResponse, error) {
	return stubAnswer[*relaypb.CreateRoomResponse](n)
}
func (n *stubNode) Join(context.Context, *relaypb.JoinRequest) (*relaypb.JoinResponse, error) {
	return stubAnswer[*relaypb.JoinResponse](n)
}
func (n *stubNode) Leave(context.Context, *relaypb.LeaveRequest) (*relaypb.LeaveResponse, error) {
	return stubAnswer[*relaypb.LeaveResponse](n)
}
func (n *stubNode) RelayMessage(context.Context, *relaypb.RelayMessageRequest) (*relaypb.RelayMessageResponse, error) {
	return stubAnswer[*relaypb.RelayMessageResponse](n)
}
func (n *stubNode) RelayBulkMessage(context.Context, *relaypb.RelayBulkMessageRequest) (*relaypb.RelayMessageResponse, error) {
	return stubAnswer[*relaypb.RelayMessageResponse](n)
}

func (n *stubNode) Connect(_ *relaypb.ConnectRequest, stream relaypb.Chat_ConnectServer) error {
	s := <-n.opens
	close(s.started)
	defer close(s.done)
	if len(s.header) > 0 {
		if err := stream.SendHeader(s.header); err != nil {
			return err
		}
	}
	for {
		select {
		case m, ok := <-s.out:
			if !ok {
				return s.err
			}
			if err := stream.SendMsg(m); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (n *stubNode) RelayStream(stream relaypb.Relay_RelayStreamServer) error {
	s := <-n.opens
	close(s.started)
	defer close(s.done)
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				if s.err != nil {
					return s.err
				}
				return stream.SendMsg(s.ack)
			}
			return err
		}
		s.got <- struct{}{}
	}
}

// replayStream is a replayed stream's client side.
type replayStream struct {
	s      *stubStream
	cs     grpc.ClientStream
	cancel context.CancelFunc
	method floorMethod
	broken bool // the replay could not open it: its later steps are skipped
}

// replayGRPC runs the log's gRPC steps in order, one at a time, against
// one stub server per node over in-memory listeners, with one client
// connection per connection the nodes accepted. It returns how many calls
// ended otherwise than in the run (by status code).
func replayGRPC(b *testing.B, l *floorLog) (mismatch int) {
	type server struct {
		n   *stubNode
		lis *memnet.Listener
		srv *grpc.Server
	}
	servers := map[string]*server{}
	conns := map[int]*grpc.ClientConn{}
	streams := map[int]*replayStream{}
	defer func() {
		for _, rs := range streams {
			if rs.cancel != nil {
				rs.cancel()
			}
		}
		for _, cc := range conns {
			_ = cc.Close()
		}
		for _, s := range servers {
			s.srv.Stop()
		}
	}()
	check := func(o *floorOp, err error) {
		if status.Code(err) != status.Code(o.err) {
			mismatch++
			if mismatch <= 3 {
				b.Logf("grpc replay: %s on %s ended %v, in the run %v", path.Base(o.method), o.node, err, o.err)
			}
		}
	}
	base := context.Background()
	for _, o := range l.ops {
		s := servers[o.node]
		if s == nil {
			s = &server{n: newStubNode(), lis: memnet.NewListener(), srv: grpc.NewServer(grpc.ReadBufferSize(sim.GRPCReadBuffer))}
			relaypb.RegisterChatServer(s.srv, s.n)
			relaypb.RegisterRelayServer(s.srv, s.n)
			go func() { _ = s.srv.Serve(s.lis) }()
			servers[o.node] = s
		}
		cc := conns[o.conn]
		if cc == nil {
			lis := s.lis
			var err error
			cc, err = grpc.NewClient("passthrough:///"+o.node, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
				grpc.WithReadBufferSize(sim.GRPCReadBuffer))
			if err != nil {
				b.Fatal(err)
			}
			conns[o.conn] = cc
		}
		fm := floorMethods[o.method]
		ctx := metadata.NewOutgoingContext(base, o.md)
		switch o.kind {
		case opUnary:
			req, resp := o.msg, o.resp
			if req == nil {
				req = fm.req()
			}
			if resp == nil && o.err == nil {
				resp = fm.resp()
			}
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if o.deadline {
				cctx, cancel = context.WithTimeout(ctx, sim.ClientTimeout)
			}
			s.n.replies <- stubReply{resp, o.err}
			err := cc.Invoke(cctx, o.method, req, fm.resp())
			cancel()
			select {
			case <-s.n.replies: // the call never reached the stub
			default:
			}
			check(o, err)
		case opOpen:
			rs := &replayStream{method: fm, s: &stubStream{header: o.header, out: make(chan proto.Message), got: make(chan struct{}),
				started: make(chan struct{}), done: make(chan struct{})}}
			streams[o.call] = rs
			sctx, cancel := context.WithCancel(ctx)
			rs.cancel = cancel
			s.n.opens <- rs.s
			cs, err := cc.NewStream(sctx, fm.desc, o.method)
			if err == nil && !fm.desc.ClientStreams {
				req := o.msg
				if req == nil {
					req = fm.req()
				}
				if err = cs.SendMsg(req); err == nil {
					err = cs.CloseSend()
				}
				if err == nil && len(o.header) > 0 {
					_, err = cs.Header()
				}
			}
			if err != nil {
				b.Logf("grpc replay: open %s on %s: %v", path.Base(o.method), o.node, err)
				rs.broken = true
				select {
				case <-s.n.opens:
				default:
				}
				continue
			}
			rs.cs = cs
			<-rs.s.started
		case opSend:
			rs := streams[o.call]
			if rs == nil || rs.broken {
				continue
			}
			rs.s.out <- o.msg
			if err := rs.cs.RecvMsg(fm.resp()); err != nil {
				b.Logf("grpc replay: %s delivery on %s: %v", path.Base(o.method), o.node, err)
				rs.broken = true
			}
		case opRecv:
			rs := streams[o.call]
			if rs == nil || rs.broken {
				continue
			}
			if err := rs.cs.SendMsg(o.msg); err != nil {
				b.Logf("grpc replay: %s item on %s: %v", path.Base(o.method), o.node, err)
				rs.broken = true
				continue
			}
			<-rs.s.got
		case opEnd:
			rs := streams[o.call]
			if rs == nil || rs.broken {
				continue
			}
			delete(streams, o.call)
			var err error
			switch {
			case status.Code(o.err) == codes.Canceled:
				// The caller went away (a disconnect or teardown).
				rs.cancel()
				err = o.err
			case fm.desc.ClientStreams:
				rs.s.ack, rs.s.err = o.resp, o.err
				if rs.s.ack == nil {
					rs.s.ack = fm.resp()
				}
				if err = rs.cs.CloseSend(); err == nil {
					err = rs.cs.RecvMsg(fm.resp())
				}
			default:
				rs.s.err = o.err
				close(rs.s.out)
				for err == nil {
					err = rs.cs.RecvMsg(fm.resp())
				}
				if err == io.EOF {
					err = nil
				}
			}
			<-rs.s.done
			rs.cancel()
			check(o, err)
		}
	}
	return mismatch
}

// --- measuring ---

// cpuNow is the process' CPU time so far (user + system, all threads).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measured is CPU and wall time of regions, each after a GC.
type measured struct{ cpu, wall time.Duration }

func (m *measured) do(f func()) {
	runtime.GC()
	c, w := cpuNow(), time.Now()
	f()
	m.cpu += cpuNow() - c
	m.wall += time.Since(w)
}

func ms(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

// BenchmarkDefaultFloor measures a default run against its floor: seeds
// 1..5 of sim.DefaultConfig per iteration, in each mode. Metrics, per run:
// sim-cpu-ms and sim-wall-ms (the simulated run, as `relaysim run`), and
// floor-cpu-ms (floor-redis-cpu-ms + floor-grpc-cpu-ms, and their wall),
// sim/floor (CPU), and floor-max-seeds/s/core (1000 / floor-cpu-ms: the
// sweep rate no simulation of this work can beat).
func BenchmarkDefaultFloor(b *testing.B) {
	for _, mode := range []system.Mode{system.ModeBulk, system.ModeSingle, system.ModeStream} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			var simulated, fredis, fgrpc measured
			var scripts, attrib time.Duration // the attribution pass: script calls' CPU, and the whole pass'
			var fc floorCounts
			runs := 0
			for b.Loop() {
				for seed := sim.Seed(1); seed <= 5; seed++ {
					cfg := sim.DefaultConfig()
					cfg.Seed, cfg.Mode = seed, mode
					l, rec := recordRun(b, cfg)
					var res *sim.Result
					simulated.do(func() { res = sim.BenchRun(b, cfg) })
					if res.TraceHash != rec.TraceHash {
						b.Fatalf("seed %s: the recorder changed the run (trace hash %s, %s without it)", seed, rec.TraceHash, res.TraceHash)
					}
					fredis.do(func() { fc.redisMismatch += replayRedis(b, l, nil) })
					var scr measured
					scr.do(func() { replayRedis(b, l, &scripts) })
					attrib += scr.cpu
					fgrpc.do(func() { fc.grpcMismatch += replayGRPC(b, l) })
					fc.add(l, res)
					runs++
				}
			}
			fc.log(b)
			floor := fredis.cpu + fgrpc.cpu
			b.ReportMetric(ms(simulated.cpu, runs), "sim-cpu-ms/run")
			b.ReportMetric(ms(simulated.wall, runs), "sim-wall-ms/run")
			b.ReportMetric(ms(floor, runs), "floor-cpu-ms/run")
			b.ReportMetric(ms(fredis.cpu, runs), "floor-redis-cpu-ms/run")
			b.ReportMetric(ms(fgrpc.cpu, runs), "floor-grpc-cpu-ms/run")
			b.ReportMetric(ms(fredis.wall+fgrpc.wall, runs), "floor-wall-ms/run")
			b.ReportMetric(float64(simulated.cpu)/float64(floor), "sim/floor")
			b.ReportMetric(float64(scripts)/float64(attrib), "redis-script-share")
			b.ReportMetric(1000/ms(floor, runs), "floor-max-seeds/s/core")
		})
	}
}

// BenchmarkFloorUnit is the unit costs of the floor, with the default run's
// own data (seed 1, bulk): one EVALSHA of the relay's send script on
// miniredis through go-redis (a new message, into the run's final state),
// one unary Send over the in-memory listener to a stub, and one delivery
// on an open Connect stream; and, for comparison, one plain GET through
// go-redis to miniredis. cpu-us/op is process CPU per operation. Use a
// fixed -benchtime (each EVALSHA adds a message to the room: the state
// grows with b.N), e.g. -benchtime=2000x.
func BenchmarkFloorUnit(b *testing.B) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	l, _ := recordRun(b, cfg)
	b.Run("evalsha-send", func(b *testing.B) {
		// The run's state (and its scripts) first, as replayRedis does.
		m := miniredis.NewMiniRedis()
		defer m.Close()
		m.ClockTTL(true)
		rdb := redis.NewClient(sim.RedisOptions(m))
		defer rdb.Close()
		ctx := context.Background()
		var sends [][]any
		for _, r := range l.redis {
			m.SetTime(r.at.Truncate(time.Millisecond))
			switch {
			case r.flush:
				sim.FlushRoutes(m)
			case r.pipe:
				p := rdb.Pipeline()
				if r.tx {
					p = rdb.TxPipeline()
				}
				for _, c := range r.cmds {
					p.Do(ctx, c...)
				}
				_, _ = p.Exec(ctx)
			case !clientSideErr(r.errs[0]):
				c := r.cmds[0]
				rdb.Do(ctx, c...)
				// EVALSHA sha 4 seq log members idem entry sender ttl
				if fmt.Sprint(c[0]) == "evalsha" && strings.HasPrefix(r.label, "send ") && r.errs[0] == "" && len(c) == 10 {
					sends = append(sends, c)
				}
			}
		}
		if len(sends) == 0 {
			b.Fatal("no successful send EVALSHA recorded")
		}
		runtime.GC()
		c0 := cpuNow()
		i := 0
		for b.Loop() {
			c := slices.Clone(sends[i%len(sends)])
			c[6] = fmt.Sprint(c[6], "#unit", i) // a new idempotency key: a new message
			if err := rdb.Do(ctx, c...).Err(); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64((cpuNow()-c0).Microseconds())/float64(b.N), "cpu-us/op")
	})
	b.Run("redis-get", func(b *testing.B) {
		m := miniredis.NewMiniRedis()
		defer m.Close()
		rdb := redis.NewClient(sim.RedisOptions(m))
		defer rdb.Close()
		ctx := context.Background()
		rdb.Set(ctx, "route:u01", "n1|s1", 0)
		runtime.GC()
		c0 := cpuNow()
		for b.Loop() {
			if err := rdb.Do(ctx, "get", "route:u01").Err(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuNow()-c0).Microseconds())/float64(b.N), "cpu-us/op")
	})
	var send, conn *floorOp
	for _, o := range l.ops {
		if send == nil && o.kind == opUnary && o.method == relaypb.Chat_Send_FullMethodName && o.err == nil {
			send = o
		}
		if conn == nil && o.kind == opOpen && o.method == relaypb.Chat_Connect_FullMethodName {
			conn = o
		}
	}
	n := newStubNode()
	lis := memnet.NewListener()
	srv := grpc.NewServer(grpc.ReadBufferSize(sim.GRPCReadBuffer))
	relaypb.RegisterChatServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	cc, err := grpc.NewClient("passthrough:///n1", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithReadBufferSize(sim.GRPCReadBuffer))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	b.Run("unary-send", func(b *testing.B) {
		ctx := metadata.NewOutgoingContext(context.Background(), send.md)
		runtime.GC()
		c0 := cpuNow()
		for b.Loop() {
			cctx, cancel := context.WithTimeout(ctx, sim.ClientTimeout)
			n.replies <- stubReply{msg: send.resp}
			if err := cc.Invoke(cctx, send.method, send.msg, &relaypb.SendResponse{}); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
		b.ReportMetric(float64((cpuNow()-c0).Microseconds())/float64(b.N), "cpu-us/op")
	})
	b.Run("delivery", func(b *testing.B) {
		var d proto.Message
		for _, o := range l.ops {
			if o.kind == opSend {
				d = o.msg
				break
			}
		}
		s := &stubStream{header: conn.header, out: make(chan proto.Message), started: make(chan struct{}), done: make(chan struct{})}
		n.opens <- s
		ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(context.Background(), conn.md))
		defer cancel()
		cs, err := cc.NewStream(ctx, floorMethods[conn.method].desc, conn.method)
		if err == nil {
			if err = cs.SendMsg(conn.msg); err == nil {
				err = cs.CloseSend()
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		<-s.started
		runtime.GC()
		c0 := cpuNow()
		for b.Loop() {
			s.out <- d
			if err := cs.RecvMsg(&relaypb.Delivery{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuNow()-c0).Microseconds())/float64(b.N), "cpu-us/op")
		cancel()
		<-s.done
	})
}

package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Node is one relay server.
type Node struct {
	cfg   Config
	deps  Deps
	hooks Hooks
	dir   *Directory
	rdb   *redis.Client
	exec  *Executor
	grpc  *grpc.Server
	peers *peers

	// ctx is the node's lifetime: work that outlives a gRPC handler runs
	// under it, and Stop/Kill cancel it.
	ctx    context.Context
	cancel context.CancelFunc
	epoch  uint64
	// incarnation names this process on its relay streams (stream.go).
	incarnation string

	// stopRefresh ends the refresh loop; Stop ends it before deregistering,
	// or a heartbeat could publish the node again.
	stopRefresh context.CancelFunc
	refreshWG   sync.WaitGroup

	mu       sync.Mutex // guards the fields below; never held across a block
	sessions map[string]*session
	streams  int
	gen      uint64
	retries  uint64
	stopped  bool
	// links is what each sender link has had processed (stream mode).
	links map[linkKey]linkSeen

	wg sync.WaitGroup // serve and refresh goroutines
	// ending counts sessions that were closed and whose stream handler has
	// not finished unregistering them yet.
	ending atomic.Int64
}

// New builds a node; Start makes it serve.
func New(cfg Config, deps Deps) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Listener == nil {
		return nil, fmt.Errorf("node %s: no listener", cfg.NodeID)
	}
	if deps.Redis == nil {
		return nil, fmt.Errorf("node %s: no redis options", cfg.NodeID)
	}
	n := &Node{cfg: cfg, deps: deps, hooks: deps.Hooks, sessions: map[string]*session{},
		incarnation: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if n.hooks == nil {
		n.hooks = noHooks{}
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.rdb = redis.NewClient(redisOptions(*deps.Redis, cfg.RedisPoolSize))
	for _, h := range deps.RedisHooks {
		n.rdb.AddHook(h)
	}
	n.dir = NewDirectory(n.rdb)
	n.dir.IdemTTL = cfg.IdemTTL
	n.dir.Legacy = cfg.Legacy
	n.dir.probe = n.probe
	ec := cfg.Executor
	ec.Probe = n.probe
	// Tasks on workers and caller-runs tasks pass different gates: an
	// embedder counts the tasks running on workers at once as PointTask
	// released minus PointTaskDone reached, and a caller-runs task holds
	// no worker (nor reaches PointTaskDone).
	ec.BeforeTask = func(ctx context.Context, label string, caller bool) {
		kind := PointTask
		if caller {
			kind = PointTaskCaller
		}
		m, _ := MessageOf(ctx)
		n.hooks.Gate(n.ctx, Point{Node: cfg.NodeID, Kind: kind, Key: label, Msg: m})
	}
	ec.AfterTask = func(ctx context.Context, label string) {
		m, _ := MessageOf(ctx)
		n.hooks.Gate(n.ctx, Point{Node: cfg.NodeID, Kind: PointTaskDone, Key: label, Msg: m})
	}
	// A recovered task panic is a bug: it is logged in production too, and
	// observed.
	ec.OnPanic = func(label string, recovered any) {
		n.cfg.Logf("relay node %s: task %q panicked (recovered): %v\n%s", n.cfg.NodeID, label, recovered, debug.Stack())
		n.hooks.Observe(PanicEvent{Node: n.cfg.NodeID, Label: label, Value: fmt.Sprint(recovered)})
		n.probe(ProbeExecPanic)
	}
	ec.OnSubmit = func(label, placement string) {
		n.hooks.Observe(TaskEvent{Node: cfg.NodeID, Label: label, Placement: placement})
	}
	n.exec = NewExecutor(ec)
	n.peers = newPeers(n)
	n.grpc = n.newServer()
	return n, nil
}

// redisOptions applies what the node needs of go-redis on top of the
// caller's options: an explicit, high pool size (an exhausted pool falls back
// to shared timers) and no maintenance notifications (they resolve DNS).
func redisOptions(o redis.Options, pool int) *redis.Options {
	if o.PoolSize == 0 {
		o.PoolSize = pool
	}
	if o.MaintNotificationsConfig == nil {
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	}
	return &o
}

func (n *Node) newServer() *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(n.authUnary, n.userUnary),
		grpc.ChainStreamInterceptor(n.authStream, n.userStream),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:    n.cfg.StreamKeepAlive,
			Timeout: n.cfg.StreamKeepAliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
	}
	s := grpc.NewServer(append(opts, n.deps.ServerOptions...)...)
	relaypb.RegisterChatServer(s, &chatServer{n: n})
	relaypb.RegisterRelayServer(s, &relayServer{n: n})
	hs := health.NewServer()
	// The server as a whole ("") and each service by its name, which is
	// what a client or a probe (grpc-health-probe -service) asks for.
	for _, name := range []string{"", relaypb.Chat_ServiceDesc.ServiceName, relaypb.Relay_ServiceDesc.ServiceName} {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(s, hs)
	reflection.Register(s)
	return s
}

// ID returns the node id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Epoch returns the epoch the node registered with (0 before Start).
func (n *Node) Epoch() uint64 { return n.epoch }

// Mode returns the mode the node relays in: its configured mode, capped by
// the protocol version it speaks.
func (n *Node) Mode() Mode { return ModeFor(n.cfg.Mode, n.cfg.Protocol) }

// Config returns the node's configuration, defaults applied: the limits
// it enforces (MaxPayload, MaxRecipients, StreamBacklog, ...) as an
// embedder or a harness needs to know them.
func (n *Node) Config() Config { return n.cfg }

// Protocol returns the relay protocol version the node speaks.
func (n *Node) Protocol() int { return n.cfg.Protocol }

// Directory returns the node's view of Redis.
func (n *Node) Directory() *Directory { return n.dir }

// info is the node's registry entry at epoch.
func (n *Node) info(epoch uint64) NodeInfo {
	return NodeInfo{ID: n.cfg.NodeID, Addr: n.cfg.Advertise, Epoch: epoch, Protocol: n.cfg.Protocol, Incarnation: n.incarnation}
}

// Start registers the node with a new epoch and serves.
func (n *Node) Start(ctx context.Context) error {
	epoch, err := n.dir.Register(WithLabel(ctx, "register "+n.cfg.NodeID), n.info(0), n.cfg.RegistryTTL)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.cfg.NodeID, err)
	}
	n.epoch = epoch
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = n.grpc.Serve(n.deps.Listener) // returns when the server stops
	}()
	rctx, stop := context.WithCancel(n.ctx)
	n.mu.Lock()
	n.stopRefresh = stop
	n.mu.Unlock()
	n.refreshWG.Add(1)
	go func() {
		defer n.refreshWG.Done()
		n.refreshLoop(rctx)
	}()
	return nil
}

// Stop shuts the node down gracefully: every client stream is closed, the
// registry entry and the routes it owns are removed, in-flight calls and
// tasks finish, and every connection is closed. When ctx ends before the
// in-flight calls do, the server is stopped hard: their streams and
// connections are cut and Stop does not wait for their handlers.
func (n *Node) Stop(ctx context.Context) {
	if !n.markStopped() {
		return
	}
	n.endRefresh()
	for _, s := range n.sessionList() {
		s.close(errNodeStopping)
	}
	if err := n.dir.Deregister(WithLabel(ctx, "stop "+n.cfg.NodeID), n.info(n.epoch)); err != nil {
		n.probe(ProbeNodeDeregisterFailed)
	}
	graceful := make(chan struct{})
	go func() {
		defer close(graceful)
		n.grpc.GracefulStop()
	}()
	select {
	case <-graceful:
	case <-ctx.Done():
		// Cuts every connection; handlers that ignore their context may
		// still be running (GracefulStop returns when they end).
		n.grpc.Stop()
	}
	n.exec.Shutdown()
	n.finish()
}

// endRefresh stops the refresh loop and waits for it.
func (n *Node) endRefresh() {
	n.mu.Lock()
	stop := n.stopRefresh
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
	n.refreshWG.Wait()
}

// Kill stops the node abruptly, as a crash would: connections drop,
// in-memory state is lost, nothing is deregistered.
func (n *Node) Kill() {
	if !n.markStopped() {
		return
	}
	// As in a crash, nothing is cleaned up (the cancelled node context
	// makes route and registry clean-up fail) and the network goes before
	// the sessions: every connection is closed before anything woken by
	// the shutdown could still answer a call.
	n.cancel()
	n.grpc.Stop()
	for _, s := range n.sessionList() {
		s.close(errNodeStopping)
	}
	n.exec.Shutdown()
	n.finish()
}

func (n *Node) markStopped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return false
	}
	n.stopped = true
	return true
}

func (n *Node) finish() {
	n.cancel()
	n.refreshWG.Wait()
	n.wg.Wait()
	n.peers.closeAll()
	_ = n.rdb.Close()
}

func (n *Node) sessionList() []*session {
	n.mu.Lock()
	defer n.mu.Unlock()
	users := make([]string, 0, len(n.sessions))
	for u := range n.sessions {
		users = append(users, u)
	}
	sort.Strings(users)
	out := make([]*session, len(users))
	for i, u := range users {
		out[i] = n.sessions[u]
	}
	return out
}

// localSession returns user's session on this node, or nil.
func (n *Node) localSession(user string) *session {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessions[user]
}

// refreshLoop re-arms the routes of connected users and the node's registry
// entry, every third of the shorter TTL.
func (n *Node) refreshLoop(ctx context.Context) {
	every := min(n.cfg.RouteTTL, n.cfg.RegistryTTL) / 3
	t := time.NewTicker(every)
	defer t.Stop()
	superseded := false
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ctx := WithLabel(ctx, fmt.Sprintf("refresh %s #%d", n.cfg.NodeID, tick))
		n.hooks.Gate(ctx, Point{Node: n.cfg.NodeID, Kind: PointRefresh, Key: fmt.Sprintf("#%d", tick)})
		sessions := map[string]uint64{}
		for _, s := range n.sessionList() {
			sessions[s.user] = s.gen
		}
		_ = n.dir.RefreshRoutes(ctx, n.cfg.NodeID, n.epoch, sessions, n.cfg.RouteTTL)
		if superseded {
			continue
		}
		err := n.dir.Heartbeat(ctx, n.info(n.epoch), n.cfg.RegistryTTL)
		switch {
		case errors.Is(err, ErrSuperseded):
			// A newer incarnation registered under this id (an
			// overlapping restart): its entry is not ours to refresh.
			superseded = true
			n.probe(ProbeNodeHeartbeatSuperseded)
			n.cfg.Logf("relay: node %s epoch %d: a newer incarnation is registered; heartbeat stopped", n.cfg.NodeID, n.epoch)
		case err != nil:
			n.probe(ProbeNodeHeartbeatFailed)
		}
	}
}

// Metrics is a snapshot of a node's executor, streams and connections.
type Metrics struct {
	Executor        ExecutorStats
	OpenStreams     int
	Sessions        int
	PeerConns       int
	LivePeers       int
	ChannelsPerPeer int
	Epoch           uint64
	// Ending counts sessions closed but not yet unregistered: their streams
	// are still open (stream and session counts differ by at most this).
	Ending int
	// LinkBacklog is the largest backlog of the node's stream links now:
	// queued plus unacknowledged items (at most Config.StreamBacklog).
	LinkBacklog int
}

// Metrics returns the node's current metrics.
func (n *Node) Metrics() Metrics {
	n.mu.Lock()
	m := Metrics{OpenStreams: n.streams, Sessions: len(n.sessions), ChannelsPerPeer: n.cfg.ChannelsPerPeer, Epoch: n.epoch}
	n.mu.Unlock()
	m.Executor = n.exec.Stats()
	m.Ending = int(n.ending.Load())
	m.LivePeers, m.PeerConns = n.peers.counts()
	m.LinkBacklog = n.peers.maxBacklog()
	return m
}

var errNodeStopping = errors.New("node stopping")

// dialer returns the function peers are dialled with.
func (n *Node) dialer() func(context.Context, string) (net.Conn, error) {
	if n.deps.Dial != nil {
		return n.deps.Dial
	}
	var d net.Dialer
	return func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
}

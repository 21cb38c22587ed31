package system

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/relaysim/relaysim/system/relaypb"
)

// This file is the in-process cluster the system tests run: N nodes serving
// gRPC over bufconn, one miniredis served over m.Dial, and users that connect
// to a node with cursors and collect what they receive. Everything is built
// inside the caller's synctest bubble and torn down by t.Cleanup, which runs
// inside the bubble too, so timers and TTLs are virtual and nothing outlives
// the test. Benchmarks use the same cluster in real time (inRealTime), and
// optionally against a real redis-server (withRedisAddr).

const testToken = "cluster-secret"

// testCluster is a relay cluster in one process.
type testCluster struct {
	t        testing.TB
	mode     Mode
	cfg      func(*Config)        // applied to every node's Config
	deps     func(string, *Deps)  // applied to every node's Deps
	realTime bool                 // outside a bubble: settle is the caller's business
	addr     string               // a real Redis to use instead of miniredis
	mr       *miniredis.Miniredis // nil with a real Redis
	rdb      *redis.Client        // the test's own view of Redis
	rec      *recorder
	probes   *probeRecorder // the code probes every node hit

	mu    sync.Mutex
	lis   map[string]*bufconn.Listener // current listener per address
	nodes map[string]*Node             // current incarnation per node id
	all   []*Node                      // every incarnation, to stop at the end
	users map[string]*testUser
	order []string // user names in creation order
}

type clusterOpt func(*testCluster)

// withConfig adjusts every node's Config.
func withConfig(f func(*Config)) clusterOpt { return func(c *testCluster) { c.cfg = f } }

// withDeps adjusts every node's Deps (node id, deps).
func withDeps(f func(string, *Deps)) clusterOpt { return func(c *testCluster) { c.deps = f } }

// inRealTime builds the cluster outside a synctest bubble (benchmarks).
func inRealTime() clusterOpt { return func(c *testCluster) { c.realTime = true } }

// withRedisAddr uses the Redis server at addr (flushed first) instead of
// miniredis.
func withRedisAddr(addr string) clusterOpt { return func(c *testCluster) { c.addr = addr } }

// newCluster starts nodes n1..nN in mode. Call it inside synctest.Test.
func newCluster(t testing.TB, mode Mode, nodes int, opts ...clusterOpt) *testCluster {
	c := &testCluster{
		t: t, mode: mode, rec: &recorder{}, probes: &probeRecorder{},
		lis: map[string]*bufconn.Listener{}, nodes: map[string]*Node{}, users: map[string]*testUser{},
	}
	for _, o := range opts {
		o(c)
	}
	if c.addr == "" {
		c.mr = miniredis.NewMiniRedis()
		// TTLs follow the bubble's clock. Not in real time: ClockTTL sorts
		// every key on every command, which would dominate a benchmark.
		c.mr.ClockTTL(!c.realTime)
	}
	c.rdb = redis.NewClient(c.redisOptions())
	t.Cleanup(c.close)
	t.Cleanup(func() { c.probes.expect(t, probesOfTest[t.Name()]...) })
	if c.addr != "" {
		require.NoError(t, c.rdb.FlushAll(context.Background()).Err())
	}
	for i := 1; i <= nodes; i++ {
		c.startNode(fmt.Sprintf("n%d", i))
	}
	return c
}

// redisOptions reach miniredis through m.Dial: the IP literal is never
// dialled, nothing resolves a name, and no retry adds jitter.
func (c *testCluster) redisOptions() *redis.Options {
	if c.addr != "" {
		return &redis.Options{
			Addr:                     c.addr,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		}
	}
	return &redis.Options{
		Addr:            "127.0.0.1:6379",
		Dialer:          func(context.Context, string, string) (net.Conn, error) { return c.mr.Dial() },
		DisableIdentity: true,
		MaxRetries:      -1,
		PoolSize:        64,
		// Maintenance notifications resolve the address on NewClient.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// dial connects to whatever listener serves addr now.
func (c *testCluster) dial(ctx context.Context, addr string) (net.Conn, error) {
	c.mu.Lock()
	l := c.lis[addr]
	c.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("no listener at %s", addr)
	}
	return l.DialContext(ctx)
}

// startNode starts (or restarts, after Kill) node id, listening at address id.
func (c *testCluster) startNode(id string) *Node {
	c.t.Helper()
	cfg := Config{NodeID: id, Advertise: id, Mode: c.mode, ClusterToken: testToken}
	if c.cfg != nil {
		c.cfg(&cfg)
	}
	l := bufconn.Listen(1 << 20)
	deps := Deps{
		Listener:     l,
		Dial:         c.dial,
		Redis:        c.redisOptions(),
		TargetScheme: "passthrough",
		Hooks:        c.rec,
		Probes:       c.probes,
	}
	if c.deps != nil {
		c.deps(id, &deps)
	}
	n, err := New(cfg, deps)
	require.NoError(c.t, err)
	c.mu.Lock()
	c.lis[id] = l
	c.nodes[id] = n
	c.all = append(c.all, n)
	c.mu.Unlock()
	require.NoError(c.t, n.Start(context.Background()))
	return n
}

func (c *testCluster) node(id string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id]
	require.NotNil(c.t, n, "no node %s", id)
	return n
}

// close tears everything down in the order of DESIGN §3.1a rule 8: users,
// client connections, nodes, Redis clients, miniredis.
func (c *testCluster) close() {
	for _, name := range c.order {
		c.users[name].disconnect()
	}
	for _, n := range c.all {
		n.Stop(context.Background())
	}
	_ = c.rdb.Close()
	if c.mr != nil {
		c.mr.Close()
	}
}

// clientConn opens a gRPC client connection to node over bufconn, through
// wrap when it is not nil.
func (c *testCluster) clientConn(node string, wrap func(net.Conn) net.Conn) *grpc.ClientConn {
	c.t.Helper()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		conn, err := c.dial(ctx, addr)
		if err != nil || wrap == nil {
			return conn, err
		}
		return wrap(conn), nil
	}
	cc, err := grpc.NewClient("passthrough:///"+node,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial))
	require.NoError(c.t, err)
	return cc
}

// chat is a one-off Chat client call on node.
func (c *testCluster) chat(node string, call func(relaypb.ChatClient) error) error {
	cc := c.clientConn(node, nil)
	defer cc.Close()
	return call(relaypb.NewChatClient(cc))
}

// relay is a one-off Relay client call on node with the given token ("" for
// none).
func (c *testCluster) relay(node, token string, call func(context.Context, relaypb.RelayClient) error) error {
	cc := c.clientConn(node, nil)
	defer cc.Close()
	ctx := context.Background()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, MDToken, token)
	}
	return call(ctx, relaypb.NewRelayClient(cc))
}

func (c *testCluster) createRoom(room string) {
	c.t.Helper()
	err := c.chat("n1", func(cl relaypb.ChatClient) error {
		_, err := cl.CreateRoom(context.Background(), &relaypb.CreateRoomRequest{Room: room})
		return err
	})
	require.NoError(c.t, err)
}

// logLen is the length of room's log in Redis.
func (c *testCluster) logLen(room string) int64 {
	c.t.Helper()
	n, err := c.rdb.LLen(context.Background(), keyLog(room)).Result()
	require.NoError(c.t, err)
	return n
}

// settle lets every goroutine of the bubble run until all are blocked. In
// real time it does nothing: the caller waits for what it needs.
func (c *testCluster) settle() {
	if !c.realTime {
		synctest.Wait()
	}
}

// testUser is a client: one user connected to one node at a time, with a
// goroutine that collects its deliveries.
type testUser struct {
	c    *testCluster
	name string

	mu     sync.Mutex
	node   string
	cc     *grpc.ClientConn
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader has returned
	got    []*relaypb.Delivery
	ended  error // why the last stream ended
}

// user returns the user called name, creating it (not connected).
func (c *testCluster) user(name string) *testUser {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := c.users[name]; u != nil {
		return u
	}
	u := &testUser{c: c, name: name}
	c.users[name] = u
	c.order = append(c.order, name)
	return u
}

// connect connects name to node with cursors from what it has received so
// far, and waits until the node has registered the session.
func (c *testCluster) connect(name, node string) *testUser {
	u := c.user(name)
	u.connect(node, nil)
	return u
}

// connect opens the user's stream on node; wrap (optional) wraps the
// client side of the connection.
func (u *testUser) connect(node string, wrap func(net.Conn) net.Conn) {
	u.c.t.Helper()
	u.open(context.Background(), node, wrap)
}

// connectWith opens the user's stream on node with ctx's metadata (a
// credential, say).
func (u *testUser) connectWith(ctx context.Context, node string) {
	u.c.t.Helper()
	u.open(ctx, node, nil)
}

func (u *testUser) open(ctx context.Context, node string, wrap func(net.Conn) net.Conn) {
	u.c.t.Helper()
	u.disconnect()
	cc := u.c.clientConn(node, wrap)
	ctx, cancel := context.WithCancel(ctx)
	stream, err := relaypb.NewChatClient(cc).Connect(ctx, &relaypb.ConnectRequest{User: u.name, Cursors: u.cursors()})
	require.NoError(u.c.t, err)
	done := make(chan struct{})
	u.mu.Lock()
	u.node, u.cc, u.cancel, u.done, u.ended = node, cc, cancel, done, nil
	u.mu.Unlock()
	go u.read(stream, done)
	u.c.settle()
}

func (u *testUser) read(stream relaypb.Chat_ConnectClient, done chan struct{}) {
	defer close(done)
	for {
		d, err := stream.Recv()
		u.mu.Lock()
		if err != nil {
			u.ended = err
			u.mu.Unlock()
			return
		}
		u.got = append(u.got, d)
		u.mu.Unlock()
	}
}

// disconnect closes the user's stream and connection, as a well-behaved
// client does. It is a no-op when not connected.
func (u *testUser) disconnect() {
	u.mu.Lock()
	cc, cancel, done := u.cc, u.cancel, u.done
	u.cc, u.cancel, u.done, u.node = nil, nil, nil, ""
	u.mu.Unlock()
	if cc == nil {
		return
	}
	cancel()
	<-done
	_ = cc.Close()
}

// cursors are the last seq received per room.
func (u *testUser) cursors() []*relaypb.Cursor {
	u.mu.Lock()
	defer u.mu.Unlock()
	last := map[string]uint64{}
	for _, d := range u.got {
		last[d.Room] = max(last[d.Room], d.Seq)
	}
	out := []*relaypb.Cursor{}
	for _, r := range slices.Sorted(maps.Keys(last)) {
		out = append(out, &relaypb.Cursor{Room: r, Seq: last[r]})
	}
	return out
}

// seqs lists the seqs the user received in room, in arrival order.
func (u *testUser) seqs(room string) []uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := []uint64{}
	for _, d := range u.got {
		if d.Room == room {
			out = append(out, d.Seq)
		}
	}
	return out
}

func (u *testUser) deliveries() []*relaypb.Delivery {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.got)
}

// streamErr is why the user's last stream ended (nil while it is open).
func (u *testUser) streamErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ended
}

func (u *testUser) chat() relaypb.ChatClient {
	u.mu.Lock()
	defer u.mu.Unlock()
	require.NotNil(u.c.t, u.cc, "%s is not connected", u.name)
	return relaypb.NewChatClient(u.cc)
}

func (u *testUser) join(room string) uint64 {
	u.c.t.Helper()
	resp, err := u.chat().Join(context.Background(), &relaypb.JoinRequest{Room: room, User: u.name})
	require.NoError(u.c.t, err)
	return resp.FromSeq
}

func (u *testUser) leave(room string) uint64 {
	u.c.t.Helper()
	resp, err := u.chat().Leave(context.Background(), &relaypb.LeaveRequest{Room: room, User: u.name})
	require.NoError(u.c.t, err)
	return resp.ToSeq
}

// send sends payload to room with client message id msgID.
func (u *testUser) send(room, msgID, payload string) *relaypb.SendResponse {
	u.c.t.Helper()
	resp, err := u.trySend(room, msgID, payload)
	require.NoError(u.c.t, err)
	return resp
}

func (u *testUser) trySend(room, msgID, payload string) (*relaypb.SendResponse, error) {
	return u.chat().Send(context.Background(), &relaypb.SendRequest{Room: room, User: u.name, ClientMsgId: msgID, Payload: []byte(payload)})
}

// seqRange is from..to inclusive.
func seqRange(from, to uint64) []uint64 {
	out := []uint64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// recorder is the cluster's Hooks: every observed event is kept, and a test
// can hold the operations of one kind at their gate.
type recorder struct {
	mu     sync.Mutex
	events []any
	gates  []Point                  // every gate passed, in arrival order
	held   map[string]chan struct{} // node|kind -> closed on release
	// heldKeys holds the operations whose key starts with a prefix.
	heldKeys map[heldKey]chan struct{}
}

type heldKey struct{ node, kind, prefix string }

// holdKey parks node's operations of kind whose key starts with prefix
// (one user's pump: "bob #") until release is called.
func (r *recorder) holdKey(node, kind, prefix string) (release func()) {
	ch := make(chan struct{})
	k := heldKey{node, kind, prefix}
	r.mu.Lock()
	if r.heldKeys == nil {
		r.heldKeys = map[heldKey]chan struct{}{}
	}
	r.heldKeys[k] = ch
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.heldKeys, k)
			r.mu.Unlock()
			close(ch)
		})
	}
}

var _ Hooks = (*recorder)(nil)

func (r *recorder) Gate(ctx context.Context, p Point) {
	r.mu.Lock()
	r.gates = append(r.gates, p)
	ch := r.held[p.Node+"|"+p.Kind]
	for k, c := range r.heldKeys {
		if ch == nil && k.node == p.Node && k.kind == p.Kind && strings.HasPrefix(p.Key, k.prefix) {
			ch = c
		}
	}
	r.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// hold parks node's operations of kind at their gate until release is
// called.
func (r *recorder) hold(node, kind string) (release func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]chan struct{}{}
	}
	r.held[node+"|"+kind] = ch
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.held, node+"|"+kind)
			r.mu.Unlock()
			close(ch)
		})
	}
}

func (r *recorder) Observe(e any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// gatesOf returns the points of kind that node's operations have reached.
func (r *recorder) gatesOf(node, kind string) []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Point
	for _, p := range r.gates {
		if p.Node == node && p.Kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// dispatches returns the DispatchEvents observed so far.
func (r *recorder) dispatches() []DispatchEvent { return eventsOf[DispatchEvent](r) }

// relays returns the RelayEvents observed so far.
func (r *recorder) relays() []RelayEvent { return eventsOf[RelayEvent](r) }

func eventsOf[E any](r *recorder) []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []E
	for _, e := range r.events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

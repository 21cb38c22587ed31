package system

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Benchmarks of the relay path, in real time (DESIGN §8), after seed
// parallel-vs-bulk-relay. They drive the sending node's own code — the
// single-mode task (relayOne: Redis GET + RelayMessage, with its retry
// policy and peer connections) run on the node's executor for every
// recipient, and the bulk-mode path (bulkRoutes: one MGET; groupByServer;
// relay: one RelayBulkMessage per server) — against receiving nodes whose
// 200..1000 users have real Connect streams open. As in the seed, the timed
// part is the sender's network path: route look-up plus relays until every
// relay call has returned (the receivers have queued the delivery on each
// session by then). Streaming the deliveries to the clients is waited for
// outside the timer, so that each iteration starts idle and every delivery
// is checked to have arrived.
//
// Sequencing (the Lua append) is left out on purpose: the seed measured
// "Redis lookup + gRPC relay", and it costs the same in both modes.

const benchRoom = "bench"

// benchCounts counts what the sending node does.
type benchCounts struct {
	rpcs  atomic.Int64
	redis atomic.Int64
}

func (bc *benchCounts) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	bc.rpcs.Add(1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (bc *benchCounts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (bc *benchCounts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		bc.redis.Add(1)
		return next(ctx, cmd)
	}
}
func (bc *benchCounts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		bc.redis.Add(1)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*benchCounts)(nil)

// benchBed is a sender node n1 and receiving nodes whose users are connected
// and counted.
type benchBed struct {
	c         *testCluster
	sender    *Node
	users     []string // every receiving user, sorted
	counts    *benchCounts
	delivered atomic.Int64
	target    atomic.Int64
	reached   chan struct{}
	seq       uint64
}

// newBenchBed starts n1 plus `remotes` receiving nodes, with users spread
// evenly over them, all joined to benchRoom and connected.
func newBenchBed(b *testing.B, remotes, users int, opts ...clusterOpt) *benchBed {
	bb := &benchBed{counts: &benchCounts{}, reached: make(chan struct{}, 1)}
	opts = append([]clusterOpt{inRealTime(), withDeps(func(id string, d *Deps) {
		d.Hooks = nil // no recording in the hot path
		if id == "n1" {
			d.RedisHooks = []redis.Hook{bb.counts}
			d.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(bb.counts.unary)}
		}
	})}, opts...)
	bb.c = newCluster(b, ModeBulk, remotes+1, opts...)
	bb.sender = bb.c.node("n1")
	bb.c.createRoom(benchRoom)
	ctx := context.Background()
	conns := map[string]*grpc.ClientConn{}
	for i := range remotes {
		node := fmt.Sprintf("n%d", i+2)
		conns[node] = bb.c.clientConn(node, nil)
		b.Cleanup(func() { conns[node].Close() })
	}
	streamCtx, cancel := context.WithCancel(ctx)
	var readers sync.WaitGroup
	b.Cleanup(func() { cancel(); readers.Wait() }) // runs before the cluster's close
	for i := range users {
		u := fmt.Sprintf("u%04d", i)
		node := fmt.Sprintf("n%d", i%remotes+2)
		chat := relaypb.NewChatClient(conns[node])
		_, err := chat.Join(ctx, &relaypb.JoinRequest{Room: benchRoom, User: u})
		require.NoError(b, err)
		stream, err := chat.Connect(streamCtx, &relaypb.ConnectRequest{User: u})
		require.NoError(b, err)
		readers.Go(func() { bb.read(stream) })
		bb.users = append(bb.users, u)
	}
	for i := range remotes {
		n := bb.c.node(fmt.Sprintf("n%d", i+2))
		want := users/remotes + min(1, max(0, users%remotes-i))
		waitFor(b, func() bool { return n.Metrics().Sessions == want }, "sessions on %s", n.ID())
	}
	// Every route is in Redis once each session has been replayed to.
	waitFor(b, func() bool {
		routes, err := bb.sender.Directory().Routes(ctx, bb.users)
		require.NoError(b, err)
		for _, r := range routes {
			if r == "" {
				return false
			}
		}
		return true
	}, "routes")
	return bb
}

func (bb *benchBed) read(stream relaypb.Chat_ConnectClient) {
	for {
		if _, err := stream.Recv(); err != nil {
			return
		}
		if bb.delivered.Add(1) == bb.target.Load() {
			bb.reached <- struct{}{}
		}
	}
}

// waitFor polls cond during setup (never inside a timed region).
func waitFor(b *testing.B, cond func() bool, what string, args ...any) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for "+what, args...)
		}
		time.Sleep(time.Millisecond)
	}
}

// message returns the next message of benchRoom.
func (bb *benchBed) message() *relaypb.RelayedMessage {
	bb.seq++
	return &relaypb.RelayedMessage{
		Room: benchRoom, Seq: bb.seq, MsgId: fmt.Sprintf("m%d", bb.seq), Sender: "sender",
		Payload: []byte("a chat message of about sixty-four bytes, as a typical one is.."), Origin: "n1",
	}
}

// expect arms the delivery counter for n more deliveries.
func (bb *benchBed) expect(n int) { bb.target.Store(bb.delivered.Load() + int64(n)) }

// awaitDeliveries waits, outside the timer, until the armed deliveries have
// all reached the clients.
func (bb *benchBed) awaitDeliveries(b *testing.B) {
	b.StopTimer()
	select {
	case <-bb.reached:
	case <-time.After(30 * time.Second):
		b.Fatalf("only %d of %d deliveries arrived", bb.delivered.Load(), bb.target.Load())
	}
	b.StartTimer()
}

// relaySingle is the per-user path, parallel like the seed's parallelStream:
// one task per recipient on the node's executor, each a GET and a
// RelayMessage.
func (bb *benchBed) relaySingle(m *relaypb.RelayedMessage) {
	n := bb.sender
	var wg sync.WaitGroup
	wg.Add(len(bb.users))
	for _, u := range bb.users {
		n.submit(n.ctx, "relay "+u, func(ctx context.Context) {
			defer wg.Done()
			n.relayOne(ctx, u, m)
		})
	}
	wg.Wait()
}

// relayBulk is the per-server path: one MGET, group by server, one
// RelayBulkMessage per server, the relays run on pool.
func (bb *benchBed) relayBulk(m *relaypb.RelayedMessage, pool *Executor) {
	n := bb.sender
	groups := groupByServer(n.bulkRoutes(n.ctx, bb.users), n.ID())
	var wg sync.WaitGroup
	wg.Add(len(groups))
	for _, g := range groups {
		pool.Submit("bulk "+g.server, func() {
			defer wg.Done()
			n.relay(n.ctx, g.server, g.users, m, ModeBulk)
		})
	}
	wg.Wait()
}

// report adds the per-message counts of the sender's calls.
func (bb *benchBed) report(b *testing.B, rpcs0, redis0 int64) {
	ops := float64(b.N)
	b.ReportMetric(float64(bb.counts.rpcs.Load()-rpcs0)/ops, "rpcs/op")
	b.ReportMetric(float64(bb.counts.redis.Load()-redis0)/ops, "redis-calls/op")
}

// runScenario1 times one message to every user, in each mode.
func runScenario1(b *testing.B, bb *benchBed) {
	for _, mode := range []Mode{ModeSingle, ModeBulk} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			rpcs0, redis0 := bb.counts.rpcs.Load(), bb.counts.redis.Load()
			for b.Loop() {
				m := bb.message()
				bb.expect(len(bb.users))
				if mode == ModeSingle {
					bb.relaySingle(m)
				} else {
					bb.relayBulk(m, bb.sender.exec)
				}
				bb.awaitDeliveries(b)
			}
			bb.report(b, rpcs0, redis0)
		})
	}
}

// BenchmarkRelayScenario1 is the seed's Scenario 1: 200 remote users, all
// connected to one remote node; per-user GET + RelayMessage in parallel vs
// one MGET + one RelayBulkMessage. Redis is miniredis over an in-memory
// pipe and gRPC runs over bufconn: there is no network round trip.
func BenchmarkRelayScenario1(b *testing.B) {
	runScenario1(b, newBenchBed(b, 1, 200))
}

// BenchmarkRelayScenario1RealRedis is Scenario 1 against a real
// redis-server on loopback TCP (gRPC still over bufconn). It is skipped when
// redis-server is not installed.
func BenchmarkRelayScenario1RealRedis(b *testing.B) {
	runScenario1(b, newBenchBed(b, 1, 200, withRedisAddr(startRedisServer(b))))
}

// BenchmarkRelayScenario2 is the seed's Scenario 2: users spread over 3
// remote nodes, bulk mode, the 3 bulk relays run on a pool of 1..4 workers.
func BenchmarkRelayScenario2(b *testing.B) {
	for _, users := range []int{200, 500, 1000} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			bb := newBenchBed(b, 3, users)
			for workers := 1; workers <= 4; workers++ {
				b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
					pool := NewExecutor(ExecutorConfig{Core: workers, Max: workers, Queue: 16})
					defer pool.Shutdown()
					rpcs0, redis0 := bb.counts.rpcs.Load(), bb.counts.redis.Load()
					for b.Loop() {
						bb.expect(users)
						bb.relayBulk(bb.message(), pool)
						bb.awaitDeliveries(b)
					}
					bb.report(b, rpcs0, redis0)
				})
			}
		})
	}
}

// startRedisServer runs a throwaway redis-server on a free loopback port
// for the benchmark, or skips when there is none.
func startRedisServer(b *testing.B) string {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("redis-server is not on PATH; install it to run the real-Redis variant")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(b, l.Close())
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	dieWithTest(cmd)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	waitFor(b, func() bool { return rdb.Ping(context.Background()).Err() == nil }, "redis-server on %s", addr)
	return addr
}

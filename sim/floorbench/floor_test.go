package floorbench

import (
	"context"
	"flag"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// The gRPC floor of a simulated run: the same stream deliveries and relay
// calls pushed through the same gRPC stack over bufconn, in real time,
// with no simulation (no bubble, scheduler, gates, Redis, trace or
// checks). The simulation cannot be faster than this; BenchmarkFloorRatio
// reports how far above it it is.
//
//	go test -run '^$' -bench FloorRatio -benchtime=1x -timeout 60m ./sim/floorbench/
//	go test -run '^$' -bench FloorRatio -benchtime=1x -floor.load=20s ./sim/floorbench/   # shorter

var floorLoad = flag.Duration("floor.load", 120*time.Second, "BenchmarkFloorRatio: load phase of the Axis B run")

// axisBRunner is Axis B, room 150 at 50 msg/s, as BENCHMARKS.md runs it
// with the runner: relaysim run -seed 0x2a -mode M -nodes 3 -users 150
// -rooms 1 -rooms-per-user 1 -rate 50 -duration LOAD -drain 60s -churn 0
// -faults=false -core 30 -max 200 -queue 1000.
func axisBRunner(mode system.Mode, load time.Duration) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Mode, cfg.Nodes = 0x2a, mode, 3
	cfg.Users, cfg.Rooms, cfg.RoomsPerUser, cfg.Churn = 150, 1, 1, 0
	cfg.Rate, cfg.Duration, cfg.Drain = 50, load, 60*time.Second
	cfg.Bounds = sim.NoFaults()
	cfg.Executor.Core, cfg.Executor.Max, cfg.Executor.Queue = 30, 200, 1000
	return cfg
}

// floorWork is what a run pushed through gRPC: deliveries on the users'
// streams, and relay calls carrying perRelay recipients each, made by
// callers goroutines at once (the pool's core).
type floorWork struct {
	users, deliveries, relays, perRelay, callers int
}

// BenchmarkFloorRatio runs the Axis B condition in the simulation, then
// its gRPC floor (the same counts of deliveries and relays, from the run),
// and reports both wall times and their ratio.
func BenchmarkFloorRatio(b *testing.B) {
	for _, mode := range []system.Mode{system.ModeBulk, system.ModeSingle} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			cfg := axisBRunner(mode, *floorLoad)
			var simWall, floorWall time.Duration
			for b.Loop() {
				res := sim.BenchRun(b, cfg)
				simWall += res.Wall
				w := floorWork{users: cfg.Users, deliveries: res.Stats.Deliveries, relays: res.Stats.Relays, callers: cfg.Executor.Core}
				w.perRelay = 1
				if mode == system.ModeBulk {
					w.perRelay = cfg.Users / cfg.Nodes // the members on one remote node
				}
				floorWall += runFloor(b, w)
			}
			b.ReportMetric(simWall.Seconds()/float64(b.N), "sim-wall-s")
			b.ReportMetric(floorWall.Seconds()/float64(b.N), "floor-wall-s")
			b.ReportMetric(simWall.Seconds()/floorWall.Seconds(), "sim/floor")
		})
	}
}

// BenchmarkFloor is the floor alone for Axis B's full-length counts
// (relaysim run ... -duration 120s: 899,400 deliveries; 11,992 bulk relays
// of 50 recipients, or 595,042 single relays).
func BenchmarkFloor(b *testing.B) {
	for _, tc := range []struct {
		mode string
		w    floorWork
	}{
		{"bulk", floorWork{users: 150, deliveries: 899400, relays: 11992, perRelay: 50, callers: 30}},
		{"single", floorWork{users: 150, deliveries: 899400, relays: 595042, perRelay: 1, callers: 30}},
	} {
		b.Run("mode="+tc.mode, func(b *testing.B) {
			var wall time.Duration
			for b.Loop() {
				wall += runFloor(b, tc.w)
			}
			b.ReportMetric(wall.Seconds()/float64(b.N), "floor-wall-s")
		})
	}
}

// floorNode is a relay node cut down to its gRPC work: a relay call hands
// each recipient's delivery to the recipient's session outbox, and each
// session's pump writes its outbox to the user's stream (system/chat.go's
// shape, without Redis, gates or the executor).
type floorNode struct {
	relaypb.UnimplementedChatServer
	relaypb.UnimplementedRelayServer
	outbox map[string]chan *relaypb.Delivery
}

func (n *floorNode) Connect(req *relaypb.ConnectRequest, stream relaypb.Chat_ConnectServer) error {
	for {
		select {
		case d := <-n.outbox[req.User]:
			if err := stream.Send(d); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (n *floorNode) push(user string, m *relaypb.RelayedMessage) {
	n.outbox[user] <- &relaypb.Delivery{Room: m.Room, Seq: m.Seq, MsgId: m.MsgId, Sender: m.Sender, Payload: m.Payload}
}

func (n *floorNode) RelayMessage(_ context.Context, req *relaypb.RelayMessageRequest) (*relaypb.RelayMessageResponse, error) {
	n.push(req.Recipient, req.Message)
	return &relaypb.RelayMessageResponse{}, nil
}

func (n *floorNode) RelayBulkMessage(_ context.Context, req *relaypb.RelayBulkMessageRequest) (*relaypb.RelayMessageResponse, error) {
	for _, u := range req.Recipients {
		n.push(u, req.Message)
	}
	return &relaypb.RelayMessageResponse{}, nil
}

// runFloor pushes w through one server over bufconn and returns the wall
// time from the first relay call to the last delivery received.
func runFloor(b *testing.B, w floorWork) time.Duration {
	b.Helper()
	users := make([]string, w.users)
	n := &floorNode{outbox: map[string]chan *relaypb.Delivery{}}
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i+1)
		n.outbox[users[i]] = make(chan *relaypb.Delivery, 64)
	}
	lis := bufconn.Listen(256 << 10)
	srv := grpc.NewServer()
	relaypb.RegisterChatServer(srv, n)
	relaypb.RegisterRelayServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	dial := func() *grpc.ClientConn {
		cc, err := grpc.NewClient("passthrough:///floor", grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
		if err != nil {
			b.Fatal(err)
		}
		return cc
	}
	// Every delivery is addressed round-robin; user i receives want[i].
	want := make([]int, w.users)
	for k := range w.deliveries {
		want[k%w.users]++
	}
	var received sync.WaitGroup
	var ready sync.WaitGroup
	for i, u := range users {
		received.Add(1)
		ready.Add(1)
		cc := dial()
		defer cc.Close()
		go func() {
			defer received.Done()
			stream, err := relaypb.NewChatClient(cc).Connect(context.Background(), &relaypb.ConnectRequest{User: u})
			ready.Done()
			if err != nil {
				b.Error(err)
				return
			}
			for range want[i] {
				if _, err := stream.Recv(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	ready.Wait()
	start := time.Now()
	relayed := w.relays * w.perRelay
	var next atomic.Int64 // the next relay call to make
	var callers sync.WaitGroup
	conns := make([]*grpc.ClientConn, 3) // channels to the peer
	for i := range conns {
		conns[i] = dial()
		defer conns[i].Close()
	}
	for c := range w.callers {
		callers.Add(1)
		go func() {
			defer callers.Done()
			client := relaypb.NewRelayClient(conns[c%len(conns)])
			for {
				r := int(next.Add(1)) - 1
				if r >= w.relays {
					return
				}
				msg := &relaypb.RelayedMessage{Room: "r1", Seq: uint64(r + 1), MsgId: fmt.Sprintf("m%d", r), Sender: "u0", Payload: []byte("payload")}
				var err error
				if w.perRelay == 1 {
					_, err = client.RelayMessage(context.Background(), &relaypb.RelayMessageRequest{Message: msg, Recipient: users[r%w.users]})
				} else {
					rcpt := make([]string, w.perRelay)
					for k := range rcpt {
						rcpt[k] = users[(r*w.perRelay+k)%w.users]
					}
					_, err = client.RelayBulkMessage(context.Background(), &relaypb.RelayBulkMessageRequest{Message: msg, Recipients: rcpt})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	// The sender node's local deliveries: straight into the outboxes.
	for k := relayed; k < w.deliveries; k++ {
		n.push(users[k%w.users], &relaypb.RelayedMessage{Room: "r1", Seq: uint64(k), MsgId: "local", Payload: []byte("payload")})
	}
	callers.Wait()
	received.Wait()
	return time.Since(start)
}

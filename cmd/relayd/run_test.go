package main

import (
	"bytes"
	"context"
	"log"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// syncBuffer is a log destination read while the node writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startNode runs relayd's run against an in-process Redis until the test
// ends, and returns the address it serves on and its log.
func startNode(t *testing.T, o options) (string, *syncBuffer) {
	t.Helper()
	mr := miniredis.RunT(t)
	o.redis, o.listen, o.token = mr.Addr(), "127.0.0.1:0", "t"
	if o.max == 0 {
		o.core, o.max, o.queue, o.channels = 1, 4, 8, 1
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, log.New(logs, "", 0)) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	serving := regexp.MustCompile(`serving on (\S+) `)
	require.Eventually(t, func() bool { return serving.MatchString(logs.String()) }, 20*time.Second, 10*time.Millisecond, "the node did not start: %s", logs.String())
	return serving.FindStringSubmatch(logs.String())[1], logs
}

// Health checks answer for the server ("") and for each service by its
// name, as a probe asks (grpc-health-probe -service relaysim.relay.v1.Chat).
func TestHealthAnswersForEveryService(t *testing.T) {
	addr, _ := startNode(t, options{node: "n1", mode: system.ModeBulk, protocol: system.ProtocolLatest})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	for _, service := range []string{"", relaypb.Chat_ServiceDesc.ServiceName, relaypb.Relay_ServiceDesc.ServiceName} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		cancel()
		if assert.NoError(t, err, "service %q", service) {
			assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.Status, "service %q", service)
		}
	}
}

// A node whose protocol cannot carry its -mode says at start which mode
// it really relays in; a node that runs its -mode says nothing of it.
func TestStartSaysWhenTheProtocolCapsTheMode(t *testing.T) {
	_, logs := startNode(t, options{node: "n1", mode: system.ModeStream, protocol: system.ProtocolV1})
	assert.Contains(t, logs.String(), "node n1: -mode stream needs protocol v3, this node speaks v1: it relays in single mode")

	_, logs = startNode(t, options{node: "n2", mode: system.ModeStream, protocol: system.ProtocolLatest})
	assert.NotContains(t, logs.String(), "needs protocol")
}

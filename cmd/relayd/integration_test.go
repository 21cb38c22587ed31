package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// The integration test runs a real cluster: three relayd processes over TCP
// on loopback against a real redis-server, in each relay mode and with
// three protocol versions at once. Real time is
// unavoidable here, so it waits by polling with generous deadlines, never by
// fixed sleeps.

const (
	itToken      = "integration-token"
	itUserSecret = "integration-user-secret"
	itAdmin      = "admin"          // the user CreateRoom calls act for
	itTimeout    = 20 * time.Second // deadline of every wait
	itPoll       = 20 * time.Millisecond
)

func TestIntegrationRealCluster(t *testing.T) {
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH; install it (apt-get install redis-server) to run the real-cluster integration test")
	}
	if testing.Short() {
		t.Skip("starts processes; skipped with -short")
	}
	bin := buildRelayd(t)
	clusters := []struct {
		name      string
		mode      string
		protocols []string
	}{
		{"single", "single", []string{"v3", "v3", "v3"}},
		{"bulk", "bulk", []string{"v3", "v3", "v3"}},
		{"stream", "stream", []string{"v3", "v3", "v3"}},
		// A rolling upgrade caught in the middle: three builds relaying to
		// each other in the best mode each pair speaks.
		{"stream-v1-v2-v3", "stream", []string{"v1", "v2", "v3"}},
	}
	for _, cl := range clusters {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			redisAddr := startRedis(t, redisServer)
			var nodes []*relaydProc
			for i, v := range cl.protocols {
				nodes = append(nodes, startRelayd(t, bin, fmt.Sprintf("n%d", i+1), redisAddr, "-mode", cl.mode, "-protocol", v))
			}
			checkHealth(t, nodes)
			runChatStory(t, nodes)
			checkGracefulStop(t, nodes)
		})
	}
}

// runChatStory: members on all three nodes receive every message once, in
// seq order, while senders on every node send concurrently; a join and a
// leave mid-stream bound what those users receive; a member that
// disconnects and reconnects to another node with its cursor misses nothing
// and receives nothing twice.
func runChatStory(t *testing.T, nodes []*relaydProc) {
	ctx := context.Background()
	_, err := nodes[0].chat.CreateRoom(ctx, &relaypb.CreateRoomRequest{Room: "lobby"})
	require.NoError(t, err)
	var users []*itUser
	for i, n := range nodes {
		for _, suffix := range []string{"a", "b"} {
			u := connectUser(t, fmt.Sprintf("u%d%s", i+1, suffix), n)
			_, err := u.node.chat.Join(ctx, &relaypb.JoinRequest{Room: "lobby", User: u.name})
			require.NoError(t, err)
			users = append(users, u)
		}
	}
	senders := []*itUser{users[0], users[2], users[4]} // one per node
	leaver, mover := users[3], users[5]                // on n2, n3
	late := connectUser(t, "late", nodes[1])           // not a member yet

	next := sendBurst(t, senders, 5, 0) // seqs 1..15
	waitSeqs(t, users, seqs(1, 15))
	// A client holding u1a's credential cannot send as u2a: the call is
	// Unauthenticated and nothing is sequenced (the join below gets 16).
	forged := metadata.AppendToOutgoingContext(ctx, system.MDUser, users[0].name, system.MDUserToken, system.UserToken(itUserSecret, users[0].name))
	_, err = nodes[1].chat.Send(forged, &relaypb.SendRequest{Room: "lobby", User: users[2].name, ClientMsgId: "forged", Payload: []byte("forged")})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "forged send: %v", err)
	joined, err := nodes[1].chat.Join(ctx, &relaypb.JoinRequest{Room: "lobby", User: late.name})
	require.NoError(t, err)
	left, err := nodes[1].chat.Leave(ctx, &relaypb.LeaveRequest{Room: "lobby", User: leaver.name})
	require.NoError(t, err)
	require.Equal(t, uint64(16), joined.FromSeq)
	require.Equal(t, uint64(15), left.ToSeq)

	mover.close()
	next = sendBurst(t, senders, 5, next) // 16..30, missed by the mover
	mover.connect(t, nodes[0])            // with its cursor, to another node
	sendBurst(t, senders, 2, next)        // 31..36
	stayers := slices.DeleteFunc(slices.Clone(users), func(u *itUser) bool { return u == leaver })
	waitSeqs(t, stayers, seqs(1, 36))
	waitSeqs(t, []*itUser{late}, seqs(16, 36))
	assert.Equal(t, seqs(1, 15), leaver.seqs(), "nothing after leave")
	for _, u := range append(users, late) {
		u.close()
	}
}

// checkGracefulStop: SIGTERM closes the open client streams and the process
// exits 0.
func checkGracefulStop(t *testing.T, nodes []*relaydProc) {
	_, err := nodes[2].chat.Join(context.Background(), &relaypb.JoinRequest{Room: "lobby", User: "watcher"})
	require.NoError(t, err)
	watcher := connectUser(t, "watcher", nodes[2])
	sendBurst(t, []*itUser{watcher}, 1, 1000)
	waitSeqs(t, []*itUser{watcher}, seqs(37, 37)) // the stream is open
	for _, n := range nodes {
		require.NoError(t, n.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, n := range nodes {
		select {
		case <-n.exited:
			assert.NoError(t, n.err, "%s exits 0 after SIGTERM", n.id)
		case <-time.After(itTimeout):
			t.Fatalf("%s did not exit after SIGTERM", n.id)
		}
	}
	require.Eventually(t, func() bool { return watcher.streamErr() != nil }, itTimeout, itPoll)
	assert.Equal(t, codes.Unavailable, status.Code(watcher.streamErr()), "the server closed the stream")
	watcher.close()
}

func checkHealth(t *testing.T, nodes []*relaydProc) {
	for _, n := range nodes {
		resp, err := healthpb.NewHealthClient(n.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.Status, n.id)
	}
}

// buildRelayd compiles this command into a temporary directory.
func buildRelayd(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "relayd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis runs a throwaway redis-server (no persistence) and waits until
// it answers PING.
func startRedis(t *testing.T, path string) string {
	port := freePort(t)
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	dieWithTest(cmd)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	require.Eventually(t, func() bool { return rdb.Ping(context.Background()).Err() == nil }, itTimeout, itPoll, "redis-server on %s", addr)
	return addr
}

// relaydProc is one running relayd and a client connection to it.
type relaydProc struct {
	id     string
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, once exited is closed
	conn   *grpc.ClientConn
	chat   relaypb.ChatClient
}

var servingLine = regexp.MustCompile(`serving on \S+ \(advertised as (\S+)\)`)

// startRelayd starts a node listening on a free loopback port and waits for
// its "serving" log line.
func startRelayd(t *testing.T, bin, id, redisAddr string, flags ...string) *relaydProc {
	cmd := exec.Command(bin, append([]string{"-node", id, "-listen", "127.0.0.1:0", "-redis", redisAddr, "-token", itToken, "-user-secret", itUserSecret}, flags...)...)
	dieWithTest(cmd)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &relaydProc{id: id, cmd: cmd, exited: make(chan struct{})}
	addr := make(chan string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		scanLog(t, id, stderr, addr)
	}()
	go func() {
		<-logged // Wait closes the pipe: read it to the end first
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no-op once it has exited
		<-p.exited
	})
	select {
	case p.addr = <-addr:
	case <-p.exited:
		t.Fatalf("%s exited before serving: %v", id, p.err)
	case <-time.After(itTimeout):
		t.Fatalf("%s did not start serving", id)
	}
	p.conn, err = grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithChainUnaryInterceptor(withCredential))
	require.NoError(t, err)
	t.Cleanup(func() { p.conn.Close() })
	p.chat = relaypb.NewChatClient(p.conn)
	return p
}

// withCredential attaches the credential of the user a unary call names
// (CreateRoom: itAdmin), unless the caller set one itself (a forged call).
func withCredential(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get(system.MDUserToken)) == 0 {
		user := itAdmin
		if r, ok := req.(interface{ GetUser() string }); ok {
			user = r.GetUser()
		}
		ctx = metadata.AppendToOutgoingContext(ctx, system.MDUser, user, system.MDUserToken, system.UserToken(itUserSecret, user))
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// scanLog sends the advertised address from the serving line, and keeps
// the log for the test's output.
func scanLog(t *testing.T, id string, r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := servingLine.FindStringSubmatch(line); m != nil {
			addr <- m[1]
		}
		t.Logf("%s: %s", id, line)
	}
}

// itUser is a client connected to one node, collecting deliveries.
type itUser struct {
	name   string
	node   *relaydProc
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	got   []*relaypb.Delivery
	ended error
}

func connectUser(t *testing.T, name string, n *relaydProc) *itUser {
	u := &itUser{name: name}
	u.connect(t, n)
	return u
}

// connect opens the user's stream on n with the cursor of what it has
// received so far; deliveries add to its history.
func (u *itUser) connect(t *testing.T, n *relaydProc) {
	ctx, cancel := context.WithCancel(context.Background())
	ctx = metadata.AppendToOutgoingContext(ctx, system.MDUserToken, system.UserToken(itUserSecret, u.name))
	stream, err := relaypb.NewChatClient(n.conn).Connect(ctx, &relaypb.ConnectRequest{User: u.name, Cursors: u.cursor()})
	require.NoError(t, err)
	done := make(chan struct{})
	u.node, u.cancel, u.done = n, cancel, done
	u.mu.Lock()
	u.ended = nil
	u.mu.Unlock()
	go func() {
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
	}()
	t.Cleanup(u.close)
}

func (u *itUser) close() {
	u.cancel()
	<-u.done
}

func (u *itUser) streamErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ended
}

func (u *itUser) seqs() []uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := []uint64{}
	for _, d := range u.got {
		out = append(out, d.Seq)
	}
	return out
}

func (u *itUser) cursor() []*relaypb.Cursor {
	s := u.seqs()
	if len(s) == 0 {
		return nil
	}
	return []*relaypb.Cursor{{Room: "lobby", Seq: slices.Max(s)}}
}

// sendBurst has every sender send n messages concurrently; it returns the
// number of messages sent so far (ids stay unique).
func sendBurst(t *testing.T, senders []*itUser, n, sent int) int {
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Go(func() {
			for k := range n {
				id := fmt.Sprintf("%s-%d", s.name, sent+i*n+k)
				_, err := s.node.chat.Send(context.Background(), &relaypb.SendRequest{
					Room: "lobby", User: s.name, ClientMsgId: id, Payload: []byte("payload " + id),
				})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	return sent + n*len(senders)
}

// waitSeqs waits until every user has received want, then checks that they
// received exactly want: once each, in order.
func waitSeqs(t *testing.T, users []*itUser, want []uint64) {
	t.Helper()
	assert.Eventually(t, func() bool {
		for _, u := range users {
			if len(u.seqs()) < len(want) {
				return false
			}
		}
		return true
	}, itTimeout, itPoll)
	for _, u := range users {
		assert.Equal(t, want, u.seqs(), "%s on %s", u.name, u.node.id)
	}
}

func seqs(from, to uint64) []uint64 {
	out := []uint64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

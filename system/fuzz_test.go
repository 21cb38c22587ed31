package system

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/relaysim/relaysim/system/relaypb"
)

// The fuzz targets feed request bytes to every Chat and Relay handler of a
// real node (two nodes over bufconn, miniredis, user credentials on):
// bytes -> unmarshal -> the call. The invariants: no panic (a handler
// panic kills the process), a status code from the documented set, and
// nothing written to Redis by a rejected call. The credential is drawn
// too, from the fuzz input (credential): the valid one, or one of the
// shapes of CredShapes, the catalogue the simulator's forge fault draws
// from as well; any but the valid one must be answered Unauthenticated.
//
// go test ./system -run '^$' -fuzz '^FuzzChatSend$' -fuzztime 10s

const fuzzSecret = "fuzz-user-secret"

// fuzzEnv is the node pair the inputs are played against. Between inputs
// the Redis state goes back to a room "r" with members alice and bob and
// one message, so a state is small and inputs do not depend on each other.
type fuzzEnv struct {
	c     *testCluster
	n1    *Node
	cc    *grpc.ClientConn
	chat  relaypb.ChatClient
	relay relaypb.RelayClient
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	c := newCluster(f, ModeBulk, 2, inRealTime(), withConfig(func(cfg *Config) { cfg.UserSecret = fuzzSecret }))
	cc := c.clientConn("n1", nil)
	f.Cleanup(func() { _ = cc.Close() })
	return &fuzzEnv{c: c, n1: c.node("n1"), cc: cc, chat: relaypb.NewChatClient(cc), relay: relaypb.NewRelayClient(cc)}
}

// reset deletes every key but the node registry's and sets the story up.
func (e *fuzzEnv) reset(t *testing.T) {
	for _, k := range e.c.mr.Keys() {
		if !strings.HasPrefix(k, "node:") {
			e.c.mr.Del(k)
		}
	}
	ctx := context.Background()
	d := e.n1.Directory()
	_, err := d.CreateRoom(ctx, "r")
	require.NoError(t, err)
	for _, u := range []string{"alice", "bob"} {
		_, err := d.Join(ctx, "r", u)
		require.NoError(t, err)
	}
	_, err = d.Append(ctx, "r", "m1", "alice", []byte("hello"))
	require.NoError(t, err)
}

// state is Redis' content apart from the node registry (heartbeats
// rewrite it in the background).
func (e *fuzzEnv) state() string {
	var b strings.Builder
	keep := false
	for _, line := range strings.SplitAfter(e.c.mr.Dump(), "\n") {
		if strings.HasPrefix(line, "- ") {
			keep = !strings.HasPrefix(line, "- node:")
		}
		if keep {
			b.WriteString(line)
		}
	}
	return b.String()
}

// fuzzCreds are the fuzz cluster's valid credentials.
var fuzzCreds = Credentials{UserSecret: fuzzSecret, ClusterToken: testToken}

// credential returns a context carrying the credential that form draws
// for a call to method acting for user, and whether it is forged: form 0
// (mod the shapes + 1) is the valid credential, form i the shape
// CredShapes[i-1] (a shape that cannot be formed for this user is the
// valid one). Only a call whose request names no user (CreateRoom) names
// it in x-user metadata: a fuzzed name need not be a valid header value,
// and a client cannot send one.
func credential(t testing.TB, form uint8, method, user string, inMD bool) (context.Context, bool) {
	kv, forged := fuzzCreds.Valid(method, user), false
	if i := int(form) % (len(CredShapes) + 1); i > 0 {
		if f, ok := CredShapes[i-1].Forge(fuzzCreds, method, user, user+"x"); ok {
			kv, forged = f, true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	if inMD {
		ctx = metadata.AppendToOutgoingContext(ctx, MDUser, user)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), forged
}

// forms are the credential draws of a seed: the valid one and each shape.
func forms() []uint8 {
	out := make([]uint8, len(CredShapes)+1)
	for i := range out {
		out[i] = uint8(i)
	}
	return out
}

// chatCodes are the codes a Chat call may end with against a healthy
// Redis: its validation, authentication, the room and membership checks,
// and a full executor.
var chatCodes = []codes.Code{codes.OK, codes.InvalidArgument, codes.Unauthenticated, codes.NotFound,
	codes.FailedPrecondition, codes.ResourceExhausted}

// relayCodes are the codes a Relay call may end with.
var relayCodes = []codes.Code{codes.OK, codes.InvalidArgument, codes.Unauthenticated, codes.FailedPrecondition}

// judge checks one call's outcome.
func (e *fuzzEnv) judge(t *testing.T, call string, err error, allowed []codes.Code, forged bool, before string) {
	t.Helper()
	code := status.Code(err)
	if !slices.Contains(allowed, code) {
		t.Fatalf("%s ended %s, not one of %v: %v", call, code, allowed, err)
	}
	if forged && code != codes.Unauthenticated {
		t.Fatalf("%s with a forged credential ended %s, not Unauthenticated: %v", call, code, err)
	}
	if code != codes.OK {
		if after := e.state(); after != before {
			t.Fatalf("%s was rejected (%s) but changed Redis:\nbefore:\n%s\nafter:\n%s", call, code, before, after)
		}
	}
}

// fuzzUnary is the shape of every unary Chat target.
func fuzzUnary[R any, PR interface {
	*R
	proto.Message
	GetUser() string
}](f *testing.F, method string, seeds []PR, do func(context.Context, relaypb.ChatClient, PR) error) {
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		require.NoError(f, err)
		for _, form := range forms() {
			f.Add(b, form)
		}
	}
	call := method[strings.LastIndexByte(method, '/')+1:]
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, b []byte, form uint8) {
		req := PR(new(R))
		if proto.Unmarshal(b, req) != nil {
			return
		}
		e.reset(t)
		before := e.state()
		ctx, forged := credential(t, form, method, req.GetUser(), false)
		e.judge(t, call, do(ctx, e.chat, req), chatCodes, forged, before)
	})
}

func FuzzChatSend(f *testing.F) {
	fuzzUnary(f, relaypb.Chat_Send_FullMethodName, []*relaypb.SendRequest{
		{Room: "r", User: "alice", ClientMsgId: "m2", Payload: []byte("hi")},
		{Room: "r", User: "alice", ClientMsgId: "m1", Payload: []byte("hello")}, // a retry
		{Room: "r", User: "carol", ClientMsgId: "m3", Payload: []byte("hi")},    // not a member
		{Room: "nope", User: "alice", ClientMsgId: "m4", Payload: []byte("x")},
		{Room: "r:log", User: "alice", ClientMsgId: "m5", Payload: []byte("x")},
	}, func(ctx context.Context, ch relaypb.ChatClient, r *relaypb.SendRequest) error {
		_, err := ch.Send(ctx, r)
		return err
	})
}

func FuzzChatJoin(f *testing.F) {
	fuzzUnary(f, relaypb.Chat_Join_FullMethodName, []*relaypb.JoinRequest{
		{Room: "r", User: "carol"}, {Room: "r", User: "alice"}, {Room: "nope", User: "carol"}, {Room: "r"},
	}, func(ctx context.Context, ch relaypb.ChatClient, r *relaypb.JoinRequest) error {
		_, err := ch.Join(ctx, r)
		return err
	})
}

func FuzzChatLeave(f *testing.F) {
	fuzzUnary(f, relaypb.Chat_Leave_FullMethodName, []*relaypb.LeaveRequest{
		{Room: "r", User: "bob"}, {Room: "r", User: "carol"}, {Room: "nope", User: "bob"}, {User: "bob"},
	}, func(ctx context.Context, ch relaypb.ChatClient, r *relaypb.LeaveRequest) error {
		_, err := ch.Leave(ctx, r)
		return err
	})
}

func FuzzChatCreateRoom(f *testing.F) {
	for _, s := range []*relaypb.CreateRoomRequest{{Room: "lobby"}, {Room: "r"}, {}, {Room: "a:b"}} {
		b, err := proto.Marshal(s)
		require.NoError(f, err)
		for _, form := range forms() {
			f.Add(b, form)
		}
	}
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, b []byte, form uint8) {
		var req relaypb.CreateRoomRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		e.reset(t)
		before := e.state()
		ctx, forged := credential(t, form, relaypb.Chat_CreateRoom_FullMethodName, "admin", true)
		_, err := e.chat.CreateRoom(ctx, &req)
		e.judge(t, "CreateRoom", err, chatCodes, forged, before)
	})
}

// FuzzChatConnect opens a stream with fuzzed cursors; an accepted one is
// closed again and the target waits (bounded) until the node has let the
// session go, so that its clean-up is not taken for the next input's
// write.
func FuzzChatConnect(f *testing.F) {
	for _, s := range []*relaypb.ConnectRequest{
		{User: "alice"},
		{User: "bob", Cursors: []*relaypb.Cursor{{Room: "r", Seq: 0}}},
		{User: "bob", Cursors: []*relaypb.Cursor{{Room: "r", Seq: 1 << 62}, {Room: "nope", Seq: 3}}},
		{User: "", Cursors: []*relaypb.Cursor{{Room: "r"}, {Room: "r"}}},
	} {
		b, err := proto.Marshal(s)
		require.NoError(f, err)
		for _, form := range forms() {
			f.Add(b, form)
		}
	}
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, b []byte, form uint8) {
		var req relaypb.ConnectRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		e.reset(t)
		before := e.state()
		ctx, forged := credential(t, form, relaypb.Chat_Connect_FullMethodName, req.GetUser(), false)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := e.chat.Connect(ctx, &req)
		if err == nil {
			var md metadata.MD
			if md, err = stream.Header(); err == nil && len(md.Get(MDSession)) == 0 {
				_, err = stream.Recv()
			}
		}
		accepted := err == nil
		if accepted {
			err = nil
		}
		e.judge(t, "Connect", err, []codes.Code{codes.OK, codes.InvalidArgument, codes.Unauthenticated}, forged && !accepted, before)
		if forged && accepted {
			t.Fatalf("Connect for %q with a forged credential was accepted", req.GetUser())
		}
		if accepted {
			cancel()
			e.waitNoSessions(t)
		}
	})
}

// waitNoSessions waits until no node holds a session (bounded: a session
// a closed stream leaves for good is a leak, reported as such).
func (e *fuzzEnv) waitNoSessions(t *testing.T) {
	for range 5000 {
		if m := e.n1.Metrics(); m.Sessions == 0 && m.OpenStreams == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the session of a closed stream was still registered after 5 s")
}

func relayed() *relaypb.RelayedMessage {
	return &relaypb.RelayedMessage{Room: "r", Seq: 1, MsgId: "m1", Sender: "alice", Payload: []byte("hello"), Origin: "n2"}
}

// fuzzRelayUnary is fuzzUnary for the relay's unary calls: the request's
// bytes, and the credential's form (the cluster token, or a shape formed
// from it; the user a relay call names is its first recipient).
func fuzzRelayUnary[R any, PR interface {
	*R
	proto.Message
}](f *testing.F, method string, seeds []PR, do func(context.Context, relaypb.RelayClient, PR) error) {
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		require.NoError(f, err)
		for _, form := range forms() {
			f.Add(b, form)
		}
	}
	call := method[strings.LastIndexByte(method, '/')+1:]
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, b []byte, form uint8) {
		req := PR(new(R))
		if proto.Unmarshal(b, req) != nil {
			return
		}
		e.reset(t)
		before := e.state()
		ctx, forged := credential(t, form, method, "bob", false)
		e.judge(t, call, do(ctx, e.relay, req), relayCodes, forged, before)
	})
}

func FuzzRelayMessage(f *testing.F) {
	fuzzRelayUnary(f, relaypb.Relay_RelayMessage_FullMethodName, []*relaypb.RelayMessageRequest{
		{Message: relayed(), Recipient: "bob"}, {Message: relayed(), Recipient: "bob", TargetEpoch: 99}, {Recipient: "bob"},
	}, func(ctx context.Context, r relaypb.RelayClient, req *relaypb.RelayMessageRequest) error {
		_, err := r.RelayMessage(ctx, req)
		return err
	})
}

func FuzzRelayBulkMessage(f *testing.F) {
	fuzzRelayUnary(f, relaypb.Relay_RelayBulkMessage_FullMethodName, []*relaypb.RelayBulkMessageRequest{
		{Message: relayed(), Recipients: []string{"bob", "alice"}}, {Message: relayed()}, {Message: relayed(), Recipients: []string{""}},
	}, func(ctx context.Context, r relaypb.RelayClient, req *relaypb.RelayBulkMessageRequest) error {
		_, err := r.RelayBulkMessage(ctx, req)
		return err
	})
}

// FuzzRelayStream writes two fuzzed items on one relay stream.
func FuzzRelayStream(f *testing.F) {
	item := func(seq uint64, rs ...string) []byte {
		m := relayed()
		m.Seq = seq
		b, err := proto.Marshal(&relaypb.RelayStreamItem{Message: m, Recipients: rs})
		require.NoError(f, err)
		return b
	}
	f.Add(item(1, "bob"), item(2, "bob", "alice"), uint8(0))
	f.Add(item(2, "bob"), item(1, "bob"), uint8(0))
	f.Add(item(1), []byte{}, uint8(0))
	for _, form := range forms()[1:] {
		f.Add(item(1, "bob"), item(1, "bob"), form)
	}
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, a, b []byte, form uint8) {
		var items []*relaypb.RelayStreamItem
		for _, raw := range [][]byte{a, b} {
			it := &relaypb.RelayStreamItem{}
			if proto.Unmarshal(raw, it) != nil {
				return
			}
			items = append(items, it)
		}
		e.reset(t)
		before := e.state()
		ctx, forged := credential(t, form, relaypb.Relay_RelayStream_FullMethodName, "bob", false)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := func() error {
			s, err := e.relay.RelayStream(ctx)
			if err != nil {
				return err
			}
			for _, it := range items {
				if err := s.Send(it); err != nil {
					break // the server ended the stream: CloseAndRecv says why
				}
			}
			_, err = s.CloseAndRecv()
			return err
		}()
		e.judge(t, "RelayStream", err, append(relayCodes, codes.Unimplemented), forged, before)
	})
}

// FuzzParseWindows: the stored window form parses back, or is an error.
func FuzzParseWindows(f *testing.F) {
	for _, s := range []string{"", "1-3", "1-3,7-", "7-", "x", "1-2-3", "-", ",", "18446744073709551615-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := ParseWindows(s)
		if err != nil {
			return
		}
		var parts []string
		for _, w := range ws {
			parts = append(parts, formatWindow(w))
		}
		again, err := ParseWindows(strings.Join(parts, ","))
		require.NoError(t, err)
		require.Equal(t, ws, again)
	})
}

func formatWindow(w Window) string {
	s := strconv.FormatUint(w.From, 10) + "-"
	if w.To != 0 {
		s += strconv.FormatUint(w.To, 10)
	}
	return s
}

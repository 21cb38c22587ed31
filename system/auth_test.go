package system

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

const testUserSecret = "user-secret"

func TestUserTokenIsHexHMACSHA256(t *testing.T) {
	// RFC 4231-style check against the well-known HMAC-SHA256 test vector.
	assert.Equal(t, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
		UserToken("key", "The quick brown fox jumps over the lazy dog"))
	assert.NotEqual(t, UserToken("s", "alice"), UserToken("s", "bob"))
	assert.NotEqual(t, UserToken("s", "alice"), UserToken("t", "alice"))
}

// as returns a context whose calls act for user with the given credential
// ("" sends none).
func as(user, token string) context.Context {
	md := metadata.Pairs(MDUser, user)
	if token != "" {
		md.Append(MDUserToken, token)
	}
	return metadata.NewOutgoingContext(context.Background(), md)
}

// TestForgedCredentialIsRejectedWithoutSideEffects: with a user secret
// configured, a call of any Chat or Relay method, unary or streaming, whose
// credential has one of the shapes of CredShapes (the catalogue the forge
// fault and the fuzz targets draw from) fails Unauthenticated, writes
// nothing to Redis, registers no session and delivers nothing.
func TestForgedCredentialIsRejectedWithoutSideEffects(t *testing.T) {
	forged := func() *relaypb.RelayedMessage {
		return &relaypb.RelayedMessage{Room: "r", Seq: 2, MsgId: "forged", Sender: "alice", Payload: []byte("p"), Origin: "n9"}
	}
	calls := []struct {
		method string
		user   string // the user the call acts for (a relay's recipient)
		call   func(ctx context.Context, cc *grpc.ClientConn) error
	}{
		{relaypb.Chat_Send_FullMethodName, "alice", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := relaypb.NewChatClient(cc).Send(ctx, &relaypb.SendRequest{Room: "r", User: "alice", ClientMsgId: "forged", Payload: []byte("p")})
			return err
		}},
		{relaypb.Chat_Join_FullMethodName, "carol", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := relaypb.NewChatClient(cc).Join(ctx, &relaypb.JoinRequest{Room: "r", User: "carol"})
			return err
		}},
		{relaypb.Chat_Leave_FullMethodName, "bob", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := relaypb.NewChatClient(cc).Leave(ctx, &relaypb.LeaveRequest{Room: "r", User: "bob"})
			return err
		}},
		{relaypb.Chat_CreateRoom_FullMethodName, "carol", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := relaypb.NewChatClient(cc).CreateRoom(ctx, &relaypb.CreateRoomRequest{Room: "r2"})
			return err
		}},
		{relaypb.Chat_Connect_FullMethodName, "carol", func(ctx context.Context, cc *grpc.ClientConn) error {
			stream, err := relaypb.NewChatClient(cc).Connect(ctx, &relaypb.ConnectRequest{User: "carol"})
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}},
		{relaypb.Relay_RelayMessage_FullMethodName, "bob", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := relaypb.NewRelayClient(cc).RelayMessage(ctx, &relaypb.RelayMessageRequest{Message: forged(), Recipient: "bob"})
			return err
		}},
		{relaypb.Relay_RelayBulkMessage_FullMethodName, "bob", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := relaypb.NewRelayClient(cc).RelayBulkMessage(ctx, &relaypb.RelayBulkMessageRequest{Message: forged(), Recipients: []string{"bob"}})
			return err
		}},
		{relaypb.Relay_RelayStream_FullMethodName, "bob", func(ctx context.Context, cc *grpc.ClientConn) error {
			s, err := relaypb.NewRelayClient(cc).RelayStream(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&relaypb.RelayStreamItem{Message: forged(), Recipients: []string{"bob"}, Link: "forger", LinkSeq: 1})
			_, err = s.CloseAndRecv()
			return err
		}},
	}
	creds := Credentials{UserSecret: testUserSecret, ClusterToken: testToken}
	for _, call := range calls {
		for _, shape := range CredShapes {
			method := call.method[strings.LastIndexByte(call.method, '/')+1:]
			t.Run(method+"/"+string(shape), func(t *testing.T) {
				kv, ok := shape.Forge(creds, call.method, call.user, "mallory")
				require.True(t, ok, "every shape can be formed here")
				synctest.Test(t, func(t *testing.T) {
					c, _ := authCluster(t)
					cc := c.clientConn("n1", nil)
					t.Cleanup(func() { _ = cc.Close() })
					before := c.mr.Dump()

					ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(append([]string{MDUser, call.user}, kv...)...))
					err := call.call(ctx, cc)
					c.settle()

					require.Error(t, err)
					assert.Equal(t, codes.Unauthenticated, status.Code(err), "status of %v", err)
					if !IsRelayMethod(call.method) {
						assert.Contains(t, status.Convert(err).Message(), call.user)
					}
					assert.NotContains(t, status.Convert(err).Message(), testUserSecret, "the secret is never echoed")
					assert.NotContains(t, status.Convert(err).Message(), UserToken(testUserSecret, call.user))
					assert.NotContains(t, status.Convert(err).Message(), testToken, "the cluster token is never echoed")
					assert.Equal(t, before, c.mr.Dump(), "Redis is unchanged")
					assert.Equal(t, 1, c.node("n1").Metrics().Sessions, "no session registered")
					assert.Equal(t, []uint64{1}, c.user("bob").seqs("r"), "nothing more is delivered")
				})
			})
		}
	}
}

// TestCredShapesAreInvalid: every shape differs from the valid credential
// of the call it is formed for, for both services, and says when it
// cannot be formed.
func TestCredShapesAreInvalid(t *testing.T) {
	creds := Credentials{UserSecret: "s", ClusterToken: "tok"}
	for _, m := range []string{relaypb.Chat_Send_FullMethodName, relaypb.Relay_RelayStream_FullMethodName} {
		valid := creds.Valid(m, "alice")
		for _, s := range CredShapes {
			kv, ok := s.Forge(creds, m, "alice", "bob")
			require.True(t, ok, "%s %s", m, s)
			assert.NotEqual(t, valid, kv, "%s %s", m, s)
			got, _ := ParseCredShape(string(s))
			assert.Equal(t, s, got)
		}
	}
	_, ok := CredOtherUser.Forge(creds, relaypb.Chat_Join_FullMethodName, "alice", "alice")
	assert.False(t, ok, "alice's own credential is valid for alice")
	_, ok = CredWrongCase.Forge(Credentials{ClusterToken: "1234"}, relaypb.Relay_RelayMessage_FullMethodName, "alice", "bob")
	assert.False(t, ok, "a token without a letter has no wrong case")
	_, ok = CredShape("nope").Forge(creds, relaypb.Chat_Send_FullMethodName, "alice", "bob")
	assert.False(t, ok)
}

// TestValidUserCredentialIsAccepted: the same calls with the credential of
// the user they act for go through; a request naming a user is judged for
// that user, not for the x-user metadata.
func TestValidUserCredentialIsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, ch := authCluster(t)
		tok := func(u string) string { return UserToken(testUserSecret, u) }

		_, err := ch.CreateRoom(as("carol", tok("carol")), &relaypb.CreateRoomRequest{Room: "r2"})
		require.NoError(t, err)
		_, err = ch.Join(as("carol", tok("carol")), &relaypb.JoinRequest{Room: "r", User: "carol"})
		require.NoError(t, err)
		resp, err := ch.Send(as("alice", tok("alice")), &relaypb.SendRequest{Room: "r", User: "alice", ClientMsgId: "m2", Payload: []byte("p")})
		require.NoError(t, err)
		assert.Equal(t, uint64(2), resp.Seq)
		c.settle()
		assert.Equal(t, []uint64{1, 2}, c.user("bob").seqs("r"))

		// Metadata naming carol does not make carol's credential good for
		// a request naming bob.
		_, err = ch.Leave(as("carol", tok("carol")), &relaypb.LeaveRequest{Room: "r", User: "bob"})
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "status of %v", err)
		_, err = ch.Leave(as("carol", tok("bob")), &relaypb.LeaveRequest{Room: "r", User: "bob"})
		assert.NoError(t, err)
	})
}

// authCluster is one node with a user secret, room r with members alice
// and bob (bob connected), and one message sent; it returns a Chat client
// to the node that sends no credential of its own.
func authCluster(t *testing.T) (*testCluster, relaypb.ChatClient) {
	c := newCluster(t, ModeBulk, 1, withConfig(func(cfg *Config) { cfg.UserSecret = testUserSecret }))
	cc := c.clientConn("n1", nil)
	t.Cleanup(func() { _ = cc.Close() })
	ch := relaypb.NewChatClient(cc)
	tok := func(u string) string { return UserToken(testUserSecret, u) }
	_, err := ch.CreateRoom(as("alice", tok("alice")), &relaypb.CreateRoomRequest{Room: "r"})
	require.NoError(t, err)
	for _, u := range []string{"alice", "bob"} {
		_, err := ch.Join(as(u, tok(u)), &relaypb.JoinRequest{Room: "r", User: u})
		require.NoError(t, err)
	}
	bob := c.user("bob")
	bob.connectWith(as("bob", tok("bob")), "n1")
	_, err = ch.Send(as("alice", tok("alice")), &relaypb.SendRequest{Room: "r", User: "alice", ClientMsgId: "m1", Payload: []byte("hello")})
	require.NoError(t, err)
	c.settle()
	require.Equal(t, []uint64{1}, bob.seqs("r"))
	return c, ch
}

// TestNonASCIIUserCreatesRoom: a user named outside printable ASCII
// authenticates a call whose request names no user (CreateRoom) through
// MDUserBin, since gRPC refuses the name as a plain MDUser value
// client-side; the credential is judged for the decoded name.
func TestNonASCIIUserCreatesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ch := authCluster(t)
		for i, user := range []string{"ålice", "部屋の主", longestName} {
			key, _ := UserMetadata(user)
			require.Equal(t, MDUserBin, key, user)
			ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(MDUserBin, user, MDUserToken, UserToken(testUserSecret, user)))
			_, err := ch.CreateRoom(ctx, &relaypb.CreateRoomRequest{Room: fmt.Sprintf("r-%d", i)})
			require.NoError(t, err, user)

			wrong := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(MDUserBin, user, MDUserToken, UserToken(testUserSecret, "alice")))
			_, err = ch.CreateRoom(wrong, &relaypb.CreateRoomRequest{Room: "r-x"})
			assert.Equal(t, codes.Unauthenticated, status.Code(err), "%s with alice's credential", user)

			raw := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(MDUser, user, MDUserToken, UserToken(testUserSecret, user)))
			_, err = ch.CreateRoom(raw, &relaypb.CreateRoomRequest{Room: "r-y"})
			assert.Equal(t, codes.Internal, status.Code(err), "gRPC refuses a non-ASCII plain metadata value client-side")
		}
		key, _ := UserMetadata("alice")
		assert.Equal(t, MDUser, key)
	})
}

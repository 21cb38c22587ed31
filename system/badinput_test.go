package system

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// TestBadInputIsRejectedWithoutSideEffects: every malformed or unauthorised
// call gets a precise gRPC status, changes nothing in Redis and delivers
// nothing.
func TestBadInputIsRejectedWithoutSideEffects(t *testing.T) {
	const maxRecipients = 10
	// msg is a relay that would be delivered to bob, were it accepted.
	msg := func() *relaypb.RelayedMessage {
		return &relaypb.RelayedMessage{Room: "r", Seq: 2, MsgId: "forged", Sender: "mallory", Payload: []byte("p")}
	}
	bulk := func(token string, recipients ...string) func(c *testCluster) error {
		return func(c *testCluster) error {
			return c.relay("n2", token, func(ctx context.Context, cl relaypb.RelayClient) error {
				_, err := cl.RelayBulkMessage(ctx, &relaypb.RelayBulkMessageRequest{Message: msg(), Recipients: recipients})
				return err
			})
		}
	}
	single := func(token string, m *relaypb.RelayedMessage, epoch uint64) func(c *testCluster) error {
		return func(c *testCluster) error {
			return c.relay("n2", token, func(ctx context.Context, cl relaypb.RelayClient) error {
				_, err := cl.RelayMessage(ctx, &relaypb.RelayMessageRequest{Message: m, Recipient: "bob", TargetEpoch: epoch})
				return err
			})
		}
	}
	send := func(req *relaypb.SendRequest) func(c *testCluster) error {
		return func(c *testCluster) error {
			return c.chat("n1", func(cl relaypb.ChatClient) error {
				_, err := cl.Send(context.Background(), req)
				return err
			})
		}
	}
	chat := func(call func(relaypb.ChatClient) error) func(c *testCluster) error {
		return func(c *testCluster) error { return c.chat("n1", call) }
	}
	withPayload := func(p []byte) *relaypb.SendRequest {
		return &relaypb.SendRequest{Room: "r", User: "alice", ClientMsgId: "m2", Payload: p}
	}
	tooMany := make([]string, maxRecipients+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("u%d", i)
	}
	ctx := context.Background()

	tests := []struct {
		name string
		call func(c *testCluster) error
		want codes.Code
	}{
		{"relay without the cluster token", single("", msg(), 0), codes.Unauthenticated},
		{"relay with a wrong cluster token", single("guess", msg(), 0), codes.Unauthenticated},
		{"bulk relay without the cluster token", bulk("", "bob"), codes.Unauthenticated},
		{"bulk relay over MaxRecipients", bulk(testToken, append(tooMany, "bob")...), codes.InvalidArgument},
		{"bulk relay without recipients", bulk(testToken), codes.InvalidArgument},
		{"bulk relay with an empty recipient", bulk(testToken, "bob", ""), codes.InvalidArgument},
		{"relay without a message", single(testToken, nil, 0), codes.InvalidArgument},
		{"relay of seq 0", single(testToken, &relaypb.RelayedMessage{Room: "r", Payload: []byte("p")}, 0), codes.InvalidArgument},
		{"relay with an empty payload", single(testToken, &relaypb.RelayedMessage{Room: "r", Seq: 2}, 0), codes.InvalidArgument},
		{"relay for another epoch of the node", single(testToken, msg(), 99), codes.FailedPrecondition},
		{"send to an unknown room", send(&relaypb.SendRequest{Room: "nope", User: "alice", ClientMsgId: "m2", Payload: []byte("p")}), codes.NotFound},
		{"send with an empty payload", send(withPayload(nil)), codes.InvalidArgument},
		{"send with an oversized payload", send(withPayload(make([]byte, DefaultConfig().MaxPayload+1))), codes.InvalidArgument},
		{"send by a non-member", send(&relaypb.SendRequest{Room: "r", User: "carol", ClientMsgId: "m2", Payload: []byte("p")}), codes.FailedPrecondition},
		{"send without a client message id", send(&relaypb.SendRequest{Room: "r", User: "alice", Payload: []byte("p")}), codes.InvalidArgument},
		{"send without a room", send(&relaypb.SendRequest{User: "alice", ClientMsgId: "m2", Payload: []byte("p")}), codes.InvalidArgument},
		{"send without a user", send(&relaypb.SendRequest{Room: "r", ClientMsgId: "m2", Payload: []byte("p")}), codes.InvalidArgument},
		{"send with a ':' in the room", send(&relaypb.SendRequest{Room: "r:log", User: "alice", ClientMsgId: "m2", Payload: []byte("p")}), codes.InvalidArgument},
		{"send with an over-long message id", send(&relaypb.SendRequest{Room: "r", User: "alice", ClientMsgId: strings.Repeat("x", maxNameLen+1), Payload: []byte("p")}), codes.InvalidArgument},
		{"create a room without a name", chat(func(cl relaypb.ChatClient) error {
			_, err := cl.CreateRoom(ctx, &relaypb.CreateRoomRequest{})
			return err
		}), codes.InvalidArgument},
		{"join an unknown room", chat(func(cl relaypb.ChatClient) error {
			_, err := cl.Join(ctx, &relaypb.JoinRequest{Room: "nope", User: "carol"})
			return err
		}), codes.NotFound},
		{"join without a user", chat(func(cl relaypb.ChatClient) error {
			_, err := cl.Join(ctx, &relaypb.JoinRequest{Room: "r"})
			return err
		}), codes.InvalidArgument},
		{"leave by a non-member", chat(func(cl relaypb.ChatClient) error {
			_, err := cl.Leave(ctx, &relaypb.LeaveRequest{Room: "r", User: "carol"})
			return err
		}), codes.FailedPrecondition},
		{"leave an unknown room", chat(func(cl relaypb.ChatClient) error {
			_, err := cl.Leave(ctx, &relaypb.LeaveRequest{Room: "nope", User: "alice"})
			return err
		}), codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, ModeBulk, 2, withConfig(func(cfg *Config) { cfg.MaxRecipients = maxRecipients }))
				c.createRoom("r")
				alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
				alice.join("r")
				bob.join("r")
				alice.send("r", "m1", "hello")
				c.settle()
				before := c.mr.Dump()

				err := tt.call(c)
				c.settle()

				assert.Equal(t, tt.want, status.Code(err), "status of %v", err)
				assert.Equal(t, before, c.mr.Dump(), "Redis is unchanged")
				assert.Equal(t, int64(1), c.logLen("r"))
				assert.Equal(t, []uint64{1}, bob.seqs("r"), "nothing more is delivered")
				assert.Equal(t, []uint64{1}, alice.seqs("r"))
				require.NoError(t, bob.streamErr())
			})
		})
	}
}

package system

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Metadata keys of client (Chat) calls. Relay calls authenticate with the
// cluster credential instead (authUnary).
const (
	// MDUserToken carries the credential of the user a call acts for:
	// UserToken(secret, user).
	MDUserToken = "x-user-token"
	// MDUser names the user a call acts for when its request names none
	// (CreateRoom). A request that names a user (Connect, Send, Join,
	// Leave) is authenticated for that user, whatever MDUser says.
	MDUser = "x-user"
	// MDUserBin is MDUser's binary form, for a user named outside
	// printable ASCII: gRPC refuses such a plain metadata value
	// client-side (Internal), and carries a "-bin" value as raw bytes
	// (base64 on the wire). MDUser wins when a call sets both.
	MDUserBin = "x-user-bin"
)

// UserMetadata is the metadata key and value that name user for a call
// whose request names none: MDUser when the name is printable ASCII,
// else MDUserBin.
func UserMetadata(user string) (key, value string) {
	for i := 0; i < len(user); i++ {
		if user[i] < 0x20 || user[i] >= 0x7f {
			return MDUserBin, user
		}
	}
	return MDUser, user
}

// UserToken returns user's credential under the operator's secret: the
// lower-case hex HMAC-SHA256 of the user id keyed with the secret, as
// `printf %s "$user" | openssl dgst -sha256 -hmac "$secret"` prints it.
func UserToken(secret, user string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(user))
	return hex.EncodeToString(m.Sum(nil))
}

var chatPrefix = "/" + relaypb.Chat_ServiceDesc.ServiceName + "/"

// userUnary rejects a Chat call that lacks a valid credential of the user
// it acts for, when the node has a user secret, before the handler runs:
// a rejected call changes nothing.
func (n *Node) userUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if n.cfg.UserSecret == "" || !strings.HasPrefix(info.FullMethod, chatPrefix) {
		return h(ctx, req)
	}
	if err := n.checkUser(ctx, info.FullMethod, req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// userStream does the same for Chat's streaming call (Connect), whose
// user is known only once its request is read: the handler reads it
// before it registers anything.
func (n *Node) userStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if n.cfg.UserSecret == "" || !strings.HasPrefix(info.FullMethod, chatPrefix) {
		return h(srv, ss)
	}
	return h(srv, &userCheckedStream{ServerStream: ss, n: n, method: info.FullMethod})
}

// userCheckedStream authenticates every request message it reads.
type userCheckedStream struct {
	grpc.ServerStream
	n      *Node
	method string
}

func (s *userCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.n.checkUser(s.Context(), s.method, m)
}

// checkUser requires the call's MDUserToken to be the credential of the
// user it acts for. The error names the user and the metadata key, never
// the secret nor the expected token.
func (n *Node) checkUser(ctx context.Context, method string, req any) error {
	md, _ := metadata.FromIncomingContext(ctx)
	user := requestUser(md, req)
	call := method[strings.LastIndexByte(method, '/')+1:]
	if user == "" {
		return status.Errorf(codes.Unauthenticated, "%s: no user to authenticate (the request names none and %s is not set)", call, MDUser)
	}
	tok := md.Get(MDUserToken)
	want := UserToken(n.cfg.UserSecret, user)
	if len(tok) != 1 || subtle.ConstantTimeCompare([]byte(tok[0]), []byte(want)) != 1 {
		return status.Errorf(codes.Unauthenticated, "%s for user %q without a valid user credential (%s)", call, user, MDUserToken)
	}
	return nil
}

// requestUser is the user a call acts for: the one its request names, or
// else the MDUser (or MDUserBin) metadata.
func requestUser(md metadata.MD, req any) string {
	if r, ok := req.(interface{ GetUser() string }); ok {
		return r.GetUser()
	}
	if u := md.Get(MDUser); len(u) == 1 {
		return u[0]
	}
	if u := md.Get(MDUserBin); len(u) == 1 {
		return u[0]
	}
	return ""
}

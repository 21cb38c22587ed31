package system

import (
	"strings"
	"unicode"

	"github.com/relaysim/relaysim/system/relaypb"
)

// CredShape names one shape of a malformed or misplaced credential. The
// shapes are the catalogue of credentials the relay must refuse: a call of
// any Chat or Relay method, unary or streaming, that carries a credential
// of one of these shapes instead of a valid one must end Unauthenticated
// before its handler runs, and so change nothing. The simulator's forge
// fault and the fuzz targets of system/ both draw from this one list, so
// that a shape added here is tried everywhere.
//
// A Chat call needs MDUserToken = UserToken(secret, user) for the user it
// acts for; a Relay call needs MDToken = the cluster token. Each shape is
// formed from the credential the call needs (see Forge).
type CredShape string

const (
	// CredMissing: the credential's metadata key is absent.
	CredMissing CredShape = "missing"
	// CredEmpty: the key is present with an empty value.
	CredEmpty CredShape = "empty"
	// CredTruncated: the valid credential without its last byte.
	CredTruncated CredShape = "truncated"
	// CredWrongCase: the valid credential with the case of every letter
	// swapped (a user credential is lower-case hex; an upper-case one is
	// not the same credential).
	CredWrongCase CredShape = "wrong-case"
	// CredOtherUser: a valid credential of someone else. A Chat call
	// carries the credential of another user than the one it acts for (the
	// caller's own); a Relay call carries, in place of the cluster token,
	// the valid user credential of the user it names, as a client sends it.
	CredOtherUser CredShape = "other-user"
	// CredWrongSecret: a credential of the right form made with a guessed
	// secret: UserToken under another secret (Chat), a guessed cluster
	// token (Relay).
	CredWrongSecret CredShape = "wrong-secret"
	// CredGarbage: a value that is no credential at all.
	CredGarbage CredShape = "garbage"
	// CredWrongCluster: a cluster credential where it does not belong. A
	// Chat call carries the valid cluster token and no user credential (a
	// node's credential acts for no user); a Relay call carries another
	// cluster's token, one that begins with this cluster's.
	CredWrongCluster CredShape = "wrong-cluster"
)

// CredShapes lists every shape, in a fixed order (draws index it).
var CredShapes = []CredShape{CredMissing, CredEmpty, CredTruncated, CredWrongCase, CredOtherUser, CredWrongSecret,
	CredGarbage, CredWrongCluster}

// ParseCredShape returns the shape named s.
func ParseCredShape(s string) (CredShape, bool) {
	for _, c := range CredShapes {
		if string(c) == s {
			return c, true
		}
	}
	return "", false
}

// Credentials are the valid credentials of a deployment, from which the
// shapes are formed.
type Credentials struct {
	UserSecret   string // Config.UserSecret
	ClusterToken string // Config.ClusterToken
}

// IsRelayMethod reports whether method (a full gRPC method name) is one of
// the Relay service's, which authenticate with the cluster credential.
func IsRelayMethod(method string) bool {
	return strings.HasPrefix(method, "/"+relaypb.Relay_ServiceDesc.ServiceName+"/")
}

// Valid returns the credential metadata (key, value pairs, as
// metadata.Pairs takes them) of a valid call to method acting for user.
func (c Credentials) Valid(method, user string) []string {
	if IsRelayMethod(method) {
		return []string{MDToken, c.ClusterToken}
	}
	return []string{MDUserToken, UserToken(c.UserSecret, user)}
}

// Forge returns the credential metadata (key, value pairs) of a call to
// method acting for user with a credential of shape s; other is the user
// whose valid credential CredOtherUser carries on a Chat call. ok is false
// when the shape would be a valid credential after all (CredOtherUser with
// other == user, CredWrongCase of a credential without a letter) or s is
// no shape: the caller then forms another one.
func (s CredShape) Forge(c Credentials, method, user, other string) (kv []string, ok bool) {
	relay := IsRelayMethod(method)
	valid := c.Valid(method, user)
	key, tok := valid[0], valid[1]
	switch s {
	case CredMissing:
		return nil, true
	case CredEmpty:
		return []string{key, ""}, true
	case CredTruncated:
		if tok == "" {
			return nil, false
		}
		return []string{key, tok[:len(tok)-1]}, true
	case CredWrongCase:
		swapped := strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, tok)
		return []string{key, swapped}, swapped != tok
	case CredOtherUser:
		if relay {
			return []string{MDUserToken, UserToken(c.UserSecret, user)}, true
		}
		return []string{key, UserToken(c.UserSecret, other)}, other != user
	case CredWrongSecret:
		if relay {
			return []string{key, "guessed-cluster-token"}, c.ClusterToken != "guessed-cluster-token"
		}
		return []string{key, UserToken("guessed-secret", user)}, c.UserSecret != "guessed-secret"
	case CredGarbage:
		return []string{key, "not-a-credential"}, true
	case CredWrongCluster:
		if relay {
			return []string{key, c.ClusterToken + "-other"}, true
		}
		return []string{MDToken, c.ClusterToken}, true
	}
	return nil, false
}

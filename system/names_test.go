package system

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// longestName is a name of exactly maxNameLen bytes, every one of its
// runes a non-ASCII letter.
var longestName = strings.Repeat("é", maxNameLen/utf8.RuneLen('é'))

// TestNonASCIINamesRelayLive: rooms and users named in any valid UTF-8
// letters, up to the longest allowed name, relay live in every mode like
// any other: the relay call carries the names in its operation label
// (x-op metadata), which gRPC refuses client-side unless it is printable
// ASCII.
func TestNonASCIINamesRelayLive(t *testing.T) {
	require.Equal(t, maxNameLen, len(longestName))
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 2)
		for _, room := range []string{"café", "комната", "部屋", longestName} {
			c.createRoom(room)
			alice, bob := c.connect("ålice", "n1"), c.connect("ボブ", "n2")
			long := c.connect(longestName, "n2")
			for _, u := range []*testUser{alice, bob, long} {
				u.join(room)
			}
			// One at a time: single mode's per-recipient relays may
			// overtake each other, and a gap is then filled from the log.
			alice.send(room, "m1", "x")
			c.settle()
			alice.send(room, "m2", "y")
			c.settle()
			for _, u := range []*testUser{bob, long} {
				assert.Equal(t, seqRange(1, 2), u.seqs(room), "%s in %s", u.name, room)
				for _, d := range u.deliveries() {
					if d.Room == room {
						assert.False(t, d.FromLog, "%s#%d reaches %s live, not from the log", room, d.Seq, u.name)
					}
				}
			}
			for _, e := range c.rec.relays() {
				assert.NoError(t, e.Err, "relay of %s#%d", e.Room, e.Seq)
			}
		}
	})
}

// TestMalformedNamesAreRefused: a name that is not valid UTF-8, or holds a
// control character or a space of any script, is refused with
// InvalidArgument by every call that takes one, and changes nothing.
// Invalid UTF-8 never reaches a handler over gRPC (protobuf refuses a
// proto3 string that is not UTF-8 before the call is made), so the rule
// is checked on validName itself as well.
func TestMalformedNamesAreRefused(t *testing.T) {
	bad := map[string]string{
		"invalid UTF-8":             "caf\xe9",
		"a truncated rune":          "\xe6\x97",
		"a C1 control (NEL)":        "a\u0085b",
		"a C1 control (U+0080)":     "a\u0080",
		"a no-break space":          "a\u00a0b",
		"an ideographic space":      "a\u3000b",
		"a line separator":          "a\u2028b",
		"a newline":                 "a\nb",
		"one byte over the longest": longestName + "x",
		// Unicode format characters (Cf): invisible, so "alice" with one
		// is another user who displays as alice.
		"a zero width space":       "alice\u200b",
		"a zero width joiner":      "a\u200db",
		"a right-to-left override": "\u202eevil",
		"a byte order mark":        "\ufeffbom",
		"a word joiner":            "bad\u2060name",
		"a soft hyphen":            "soft\u00adhyphen",
		"a tag character":          "tag\U000E0041",
		"an Arabic letter mark":    "a\u061cb",
		// Other default-ignorable code points that render as nothing.
		"a Hangul filler":             "a\u3164b",
		"a combining grapheme joiner": "a\u034fb",
	}
	for what, name := range bad {
		assert.Equal(t, codes.InvalidArgument, status.Code(validName("room", name)), "%s: %q", what, name)
	}
	ok := []string{"café", "部屋", longestName, "ab-c_d.e", "😀"}
	for _, name := range ok {
		assert.NoError(t, validName("room", name))
	}

	calls := map[string]func(cl relaypb.ChatClient, name string) error{
		"CreateRoom": func(cl relaypb.ChatClient, name string) error {
			_, err := cl.CreateRoom(context.Background(), &relaypb.CreateRoomRequest{Room: name})
			return err
		},
		"Join as": func(cl relaypb.ChatClient, name string) error {
			_, err := cl.Join(context.Background(), &relaypb.JoinRequest{Room: "r", User: name})
			return err
		},
		"Leave as": func(cl relaypb.ChatClient, name string) error {
			_, err := cl.Leave(context.Background(), &relaypb.LeaveRequest{Room: name, User: "alice"})
			return err
		},
		"Send with id": func(cl relaypb.ChatClient, name string) error {
			_, err := cl.Send(context.Background(), &relaypb.SendRequest{Room: "r", User: "alice", ClientMsgId: name, Payload: []byte("p")})
			return err
		},
		"Connect as": func(cl relaypb.ChatClient, name string) error {
			// Bounded (in virtual time): an accepted stream would never end.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			s, err := cl.Connect(ctx, &relaypb.ConnectRequest{User: name})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
	}
	for call, f := range calls {
		for what, name := range bad {
			if !utf8.ValidString(name) {
				continue // see above: the client's marshalling refuses it
			}
			t.Run(call+" "+what, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c := newCluster(t, ModeBulk, 2)
					c.createRoom("r")
					alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
					alice.join("r")
					bob.join("r")
					alice.send("r", "m1", "hello")
					c.settle()
					before := c.mr.Dump()

					err := c.chat("n1", func(cl relaypb.ChatClient) error { return f(cl, name) })
					c.settle()

					assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
					assert.Equal(t, before, c.mr.Dump(), "Redis is unchanged")
					assert.Equal(t, []uint64{1}, bob.seqs("r"))
				})
			})
		}
	}
}

// TestOpLabelRoundTrips: an operation label reaches the receiver exactly
// as the sender wrote it, whatever its bytes; printable ASCII without '%'
// travels unchanged.
func TestOpLabelRoundTrips(t *testing.T) {
	for _, label := range []string{"bulk r#1 ->n2", "relay café#3 ボブ", "100% done", "a\x00\xffb", longestName, ""} {
		v := escapeOp(label)
		for i := 0; i < len(v); i++ {
			require.True(t, v[i] >= 0x20 && v[i] < 0x7f, "%q escapes to %q", label, v)
		}
		assert.Equal(t, label, unescapeOp(v))
	}
	assert.Equal(t, "bulk r#1 ->n2", escapeOp("bulk r#1 ->n2"))
	assert.Equal(t, "50%zz", unescapeOp("50%zz"), "a raw label from a legacy peer is taken as it is")
}

// TestLegacyNamesKeepTheOldBehaviour: a node with Legacy.Names sends its
// labels raw, as builds before the fix did: a relay naming a non-ASCII
// room fails in the sender's client with Internal and is not retried.
func TestLegacyNamesKeepTheOldBehaviour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 2, withConfig(func(cfg *Config) { cfg.Legacy.Names = true }))
		c.createRoom("café")
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		alice.join("café")
		bob.join("café")
		alice.send("café", "m1", "x")
		c.settle()
		evs := c.rec.relaysTo("n1", "n2")
		require.Len(t, evs, 1, "not retried")
		assert.Equal(t, codes.Internal, status.Code(evs[0].Err), "%v", evs[0].Err)
		assert.Empty(t, bob.seqs("café"), "only the catch-up would deliver it")
		assert.NoError(t, c.chat("n1", func(cl relaypb.ChatClient) error {
			_, err := cl.CreateRoom(context.Background(), &relaypb.CreateRoomRequest{Room: "a\u00a0b"})
			return err
		}), "the old name rule lets a no-break space through")
		l, err := ParseLegacy("names,deregister")
		require.NoError(t, err)
		assert.Equal(t, Legacy{Names: true, Deregister: true}, l)
		assert.Equal(t, "names,deregister", l.String())
		_, err = ParseLegacy("names,colour")
		assert.ErrorContains(t, err, `unknown legacy behaviour "colour"`)
	})
}

package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// NameStyle is the alphabet of a run's room and user names (a swarm
// knob): every valid name relays live like any other, whatever its script
// and up to the longest allowed name (docs/protocol-rules.md).
type NameStyle string

const (
	// NamesDrawn: each seed draws ASCII or wide, evenly, from a sub-seed
	// of its own ("names"), so that half the seeds run non-ASCII names and
	// no other draw moves.
	NamesDrawn NameStyle = ""
	// NamesASCII: u01, r01, as before.
	NamesASCII NameStyle = "ascii"
	// NamesWide: letters of other scripts (accented Latin, Cyrillic,
	// Greek, CJK, Hangul, emoji), some names at the maximum length.
	NamesWide NameStyle = "wide"
)

// ParseNameStyle reads a NameStyle ("" or "drawn", "ascii", "wide").
func ParseNameStyle(s string) (NameStyle, error) {
	switch s {
	case "", "drawn":
		return NamesDrawn, nil
	case string(NamesASCII), string(NamesWide):
		return NameStyle(s), nil
	}
	return "", fmt.Errorf("unknown name style %q (want drawn, ascii or wide)", s)
}

// wide reports whether names are wide under seed's draw.
func (s NameStyle) wide(seed Seed) bool {
	switch s {
	case NamesASCII:
		return false
	case NamesWide:
		return true
	}
	return seed.Derive("names").Rand().IntN(2) == 0
}

// wideAlphabets are the scripts wide names are drawn from: every rune a
// letter or a symbol, none a space, control or format character.
var wideAlphabets = [][]rune{
	[]rune("éàüøñçåßœ"),
	[]rune("жщыюяфэё"),
	[]rune("αβγδλμπω"),
	[]rune("部屋話者猫犬空海"),
	[]rune("가나다라마바사"),
	[]rune("🙂🚀🌊🎲🦊"),
}

// WideNames draws n unique names in other scripts: each is a short word of
// one script followed by its zero-padded number (so no two are equal),
// and about one in four is padded to exactly system.MaxNameLen bytes.
// tags are the names without padding, short enough to build message ids
// from.
func WideNames(r *rand.Rand, n int) (names, tags []string) {
	width := len(strconv.Itoa(n))
	for i := range n {
		a := wideAlphabets[r.IntN(len(wideAlphabets))]
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteRune(a[r.IntN(len(a))])
		}
		fmt.Fprintf(&b, "%0*d", width, i+1)
		tag := b.String()
		name := tag
		if r.IntN(4) == 0 {
			name = padName(tag, a)
		}
		names, tags = append(names, name), append(tags, tag)
	}
	return names, tags
}

// LongestName pads name with runes of alphabet a (then 'é' and 'z' for
// the last bytes) to exactly system.MaxNameLen bytes.
func padName(name string, a []rune) string {
	var b strings.Builder
	b.WriteString(name)
	for i := 0; ; i++ {
		r := a[i%len(a)]
		if b.Len()+utf8.RuneLen(r) > system.MaxNameLen {
			break
		}
		b.WriteRune(r)
	}
	for b.Len()+2 <= system.MaxNameLen {
		b.WriteRune('é')
	}
	for b.Len() < system.MaxNameLen {
		b.WriteByte('z')
	}
	return b.String()
}

// NonASCII reports whether s has a byte outside ASCII.
func NonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// BadNames are the malformed name shapes a run's adversarial name calls
// try: each must be refused with InvalidArgument (Internal when it is not
// valid UTF-8: protobuf refuses to marshal it) and change nothing. No
// valid name equals one of them.
var BadNames = []string{
	"", // empty
	strings.Repeat("é", system.MaxNameLen/2) + "x", // one byte over the longest
	"bad\x01name",   // a C0 control
	"bad\nname",     // a newline
	"bad\x7f",       // DEL
	"bad\u0085name", // a C1 control (NEL)
	"bad name",      // a space
	"bad\u00a0name", // a no-break space
	"bad\u3000name", // an ideographic space
	"bad:name",      // the Redis key separator
	"caf\xe9",       // invalid UTF-8 (Latin-1 é)
	"\xe9\x83",      // a truncated rune
}

// badCalls are the calls an adversarial name call makes.
var badCalls = []ActionKind{ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID, ActBadConnect}

// planBadNames draws up to three malformed-name calls in [start, end),
// from a sub-seed of their own ("bad-names"), made by users of the
// workload against its rooms.
func planBadNames(seed Seed, users, rooms []string, nodes int, start, end time.Duration) []Action {
	r := seed.Derive("bad-names").Rand()
	n := r.IntN(4)
	if end <= start || len(users) == 0 || len(rooms) == 0 {
		return nil
	}
	var out []Action
	for i := range n {
		at := start + time.Duration(r.Int64N(int64(end-start))).Truncate(time.Millisecond)
		a := Action{At: at, User: users[r.IntN(len(users))], Kind: badCalls[r.IntN(len(badCalls))], Room: rooms[r.IntN(len(rooms))], Node: r.IntN(nodes)}
		badName := BadNames[r.IntN(len(BadNames))]
		switch a.Kind {
		case ActBadCreate, ActBadJoin, ActBadSend:
			a.Room = badName
		case ActBadJoinAs, ActBadConnect:
			a.As = badName
		}
		if a.Kind == ActBadSend || a.Kind == ActBadSendID {
			a.MsgID = fmt.Sprintf("bad%d", i+1)
			if a.Kind == ActBadSendID {
				a.MsgID = badName
			}
		}
		out = append(out, a)
	}
	return out
}

// opLabel makes a client's operation label fit for the x-op metadata
// value, as the relay's own labels are: every byte outside printable
// ASCII, and '%', percent-encoded (gRPC refuses any other value
// client-side).
func opLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// callCredential is the user credential a unary call carries: a
// malformed-name call naming another user carries that user's own valid
// credential (the harness holds the secret), so that only the name can be
// what refuses it; any other call's is credential's.
func (cl *Client) callCredential(a Action) []string {
	if a.Kind == ActBadJoinAs || a.Kind == ActBadConnect {
		return []string{system.MDUserToken, system.UserToken(cl.c.userSecret, a.As)}
	}
	return cl.credential(a)
}

// badConnect opens a delivery stream as a.As (a malformed user, with its
// valid credential) on a.Node once, and records the outcome: refused, or
// accepted (the node sent its session header).
func (cl *Client) badConnect(a Action, n int, inv invocation) {
	c := cl.c
	cl.setPending(a, inv)
	node := a.Node % len(c.nodes)
	cc := c.clientConn(c.nodes[node].id, fmt.Sprintf("%s/bad%d", cl.user, n))
	ctx, cancel := context.WithTimeout(cl.ctx, ClientTimeout)
	ctx = metadata.AppendToOutgoingContext(ctx, system.MDOp, opLabel(fmt.Sprintf("%s a%d", cl.user, n)),
		system.MDUserToken, system.UserToken(c.userSecret, a.As))
	stream, err := relaypb.NewChatClient(cc).Connect(ctx, &relaypb.ConnectRequest{User: a.As})
	if err == nil {
		var md metadata.MD
		if md, err = stream.Header(); err == nil && len(md.Get(system.MDSession)) == 0 {
			_, err = stream.Recv()
			if err == nil {
				err = status.Error(codes.Internal, "stream without a session header")
			}
		}
	}
	cancel()
	_ = cc.Close()
	c.Sched.Gate(dst.GateSpec{Node: cl.user, Kind: KindRPCDone, ID: fmt.Sprintf("a%d try1", n), Touch: c.tClient(cl.user)})
	cl.record(a, inv, node, 1, reply{}, err)
}

// Alphabet is how wide a run's identifiers are drawn (a run flag and
// story knob, -alphabet): AlphabetPlain, the default, runs nodes n1, n2,
// ... and the malformed names of BadNames; AlphabetWide draws valid node
// ids from a wider alphabet (WideNodeIDs), tries once at start-up to start
// a node whose id is malformed (BadNodeIDs: it must be refused), and adds
// one malformed-name call whose name holds a Unicode format character
// (FormatNames). Every wide draw comes from a sub-seed of its own, and a
// plain run draws none of them: the default runs' traces do not move.
// `relaysim sweep` runs about half the seeds wide (SweepAlphabet).
type Alphabet string

const (
	AlphabetPlain Alphabet = ""
	AlphabetWide  Alphabet = "wide"
)

// ParseAlphabet reads an Alphabet ("" or "plain", "wide").
func ParseAlphabet(s string) (Alphabet, error) {
	switch s {
	case "", "plain":
		return AlphabetPlain, nil
	case string(AlphabetWide):
		return AlphabetWide, nil
	}
	return "", fmt.Errorf("unknown alphabet %q (want plain or wide)", s)
}

// String is the alphabet's flag value.
func (a Alphabet) String() string {
	if a == AlphabetPlain {
		return "plain"
	}
	return string(a)
}

// wideBounds gives a wide run the wide world's fault kinds, off by
// default (a bound of 0 draws none; each kind's count is drawn from its
// own sub-seed, so no other draw moves): up to one flood, a user with a
// long backlog, and up to one supersede, a restart whose old
// incarnation lives on and heartbeats. A bound set by a flag is kept.
func wideBounds(b *FaultBounds) {
	if b.Floods == 0 {
		b.Floods = 1
	}
	if b.Supersedes == 0 {
		b.Supersedes = 1
	}
}

// SweepAlphabet is the sweep's draw for a seed it is not told the
// alphabet of: wide for about half the seeds, from a sub-seed of its own
// ("alphabet"). The sweep then runs every job of that seed with
// -alphabet=wide, and its replay commands say so.
func SweepAlphabet(seed Seed) Alphabet {
	if seed.Derive("alphabet").Rand().IntN(2) == 0 {
		return AlphabetWide
	}
	return AlphabetPlain
}

// FormatChars are Unicode format characters (category Cf): invisible, so
// a name holding one displays as another name.
var FormatChars = []rune{
	'\u200b',     // zero width space
	'\u200d',     // zero width joiner
	'\u202e',     // right-to-left override
	'\ufeff',     // zero width no-break space (BOM)
	'\u2060',     // word joiner
	'\u00ad',     // soft hyphen
	'\u061c',     // Arabic letter mark
	'\U000E0041', // tag latin capital letter A
}

// FormatName makes a malformed name that displays as base: base with the
// format character f before it (even i) or after it (odd i). A base too
// long to take it becomes "alice".
func FormatName(base string, f rune, i int) string {
	if len(base)+utf8.RuneLen(f) > system.MaxNameLen {
		base = "alice"
	}
	if i%2 == 0 {
		return string(f) + base
	}
	return base + string(f)
}

// planFormatName draws the wide alphabet's one malformed-name call whose
// name is a room or user of the workload with a format character (the
// lookalike "alice" + U+200B), from a sub-seed of its own
// ("bad-names-format"); number is its message id's number.
func planFormatName(seed Seed, users, rooms []string, nodes int, start, end time.Duration, number int) []Action {
	r := seed.Derive("bad-names-format").Rand()
	if end <= start || len(users) == 0 || len(rooms) == 0 {
		return nil
	}
	at := start + time.Duration(r.Int64N(int64(end-start))).Truncate(time.Millisecond)
	a := Action{At: at, User: users[r.IntN(len(users))], Kind: badCalls[r.IntN(len(badCalls))], Room: rooms[r.IntN(len(rooms))], Node: r.IntN(nodes)}
	f, i := FormatChars[r.IntN(len(FormatChars))], r.IntN(2)
	switch a.Kind {
	case ActBadCreate, ActBadJoin, ActBadSend:
		a.Room = FormatName(a.Room, f, i)
	case ActBadJoinAs, ActBadConnect:
		a.As = FormatName(users[r.IntN(len(users))], f, i)
	}
	if a.Kind == ActBadSend || a.Kind == ActBadSendID {
		a.MsgID = fmt.Sprintf("bad%d", number)
		if a.Kind == ActBadSendID {
			a.MsgID = FormatName(a.MsgID, f, i)
		}
	}
	return []Action{a}
}

// WideNodeIDs draws n unique valid node ids of the wider alphabet:
// letters of any script, digits, '-', '_' and '.', each ending in its
// number so that no two are equal.
func WideNodeIDs(r *rand.Rand, n int) []string {
	shapes := []string{"node-%d.eu", "n_%d", "nœud%d", "узел-%d", "relay.%d", "ノード%d", "N%d", "κόμβος_%d"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(shapes[r.IntN(len(shapes))], i+1)
	}
	return out
}

// BadNodeIDs are the malformed node ids the wide alphabet's start-up
// attempt draws one of: each must make system.New refuse the node ('@'
// cuts a route value, ':' is the Redis key separator).
var BadNodeIDs = []string{
	"n@4",
	"n:4",
	"node 4",
	"",
	strings.Repeat("n", 65),
	"n4\u200b",
	"n\n4",
	"n/4",
}

package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bad is a malformed-name call of kind k, invoked at line-1 and ended at
// line with status err ("" for accepted at seq).
func bad(line int, k Kind, user, room, id, err string, seq uint64) Event {
	return Event{Kind: k, User: user, Room: room, MsgID: id, OK: err == "", Err: err, Seq: seq,
		Node: "n1", InvokedLine: line - 1, TraceLine: line}
}

func TestCheckBadNamesRefused(t *testing.T) {
	two := map[string][]Window{"u1": open, "u2": open}
	q := func(s string) string { return `"` + s + `"` }
	tests := []struct {
		name   string
		log    []LogEntry
		events []Event
		want   []Violation
	}{
		{"every malformed call refused, nothing changed", logOf("m1"), []Event{
			snd(1, "u1", "r1", 1, "m1"), dlv(2, "u2", "r1", 1, "m1"),
			bad(4, KindBadCreate, "u1", "r\x01", "", "InvalidArgument", 0),
			bad(6, KindBadJoin, "u1", "", "", "InvalidArgument", 0),
			bad(8, KindBadJoin, "u\u00a0x", "r1", "", "InvalidArgument", 0),
			bad(10, KindBadSend, "u1", "r1", "m\n2", "InvalidArgument", 0),
			bad(12, KindBadSend, "u1", "caf\xe9", "m3", "Internal", 0),
			bad(14, KindBadConnect, "u\u3000", "", "", "InvalidArgument", 0),
			bad(16, KindBadConnect, "", "", "", "Unauthenticated", 0),
		}, nil},
		{"unknown outcomes are allowed", logOf("m1"), []Event{
			bad(4, KindBadSend, "u1", "r1", "m\x7f", "DeadlineExceeded", 0),
			bad(6, KindBadJoin, "u1", "r ", "", "Pending", 0),
		}, nil},
		{"accepted", logOf("m1", "m\x01"), []Event{
			bad(4, KindBadSend, "u1", "r1", "m\x01", "", 2),
		}, []Violation{
			{Property: PropBadNames, User: q("u1"), Room: q("r1"), Seq: 2, TraceLines: []int{4}},
		}},
		{"refused for another reason", logOf("m1"), []Event{
			bad(4, KindBadJoin, "u1", "r\x01", "", "NotFound", 0),
			bad(6, KindBadSend, "u1", "r1", "m\n", "Internal", 0),        // valid UTF-8: no excuse
			bad(8, KindBadSend, "u1", "r1", "m\n", "Unauthenticated", 0), // a user to authenticate
		}, []Violation{
			{Property: PropBadNames, User: q("u1"), Room: `"r\x01"`, TraceLines: []int{4}},
			{Property: PropBadNames, User: q("u1"), Room: q("r1"), TraceLines: []int{6}},
			{Property: PropBadNames, User: q("u1"), Room: q("r1"), TraceLines: []int{8}},
		}},
		{"timed out, but appended and delivered", []LogEntry{{Seq: 1, MsgID: "m\x01", Sender: "u1"}}, []Event{
			bad(4, KindBadSend, "u1", "r1", "m\x01", "DeadlineExceeded", 0),
			dlv(6, "u2", "r1", 1, "m\x01"),
		}, []Violation{
			{Property: PropBadNames, User: q("u1"), Room: q("r1"), Seq: 1, TraceLines: []int{4}},
			{Property: PropBadNames, User: q("u1"), Room: q("r1"), TraceLines: []int{4, 6}},
		}},
		{"a malformed join opened a window", logOf("m1", "m2"), []Event{
			bad(4, KindBadJoin, "u\x01", "r1", "", "Unavailable", 0),
			snd(5, "u1", "r1", 2, "m2"), dlv(6, "u\x01", "r1", 2, "m2"),
		}, []Violation{{Property: PropBadNames, User: `"u\x01"`, Room: q("r1"), TraceLines: []int{4, 6}}}},
		{"a malformed user got a session", logOf("m1"), []Event{
			bad(4, KindBadConnect, "u\x01", "", "", "Unavailable", 0),
			{Kind: KindSessionClosed, User: "u\x01", TraceLine: 7},
		}, []Violation{{Property: PropBadNames, User: `"u\x01"`, Room: `""`, TraceLines: []int{4, 7}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, tt.want, CheckBadNamesRefused(oneRoom(tt.log, two, tt.events...)))
		})
	}
}

// TestBadNameCallsAreNotRealCalls: a malformed-name call, even one the
// relay wrongly accepted, is no ack the other checkers count, and Check
// runs CheckBadNamesRefused.
func TestBadNameCallsAreNotRealCalls(t *testing.T) {
	h := oneRoom(logFrom("u1", "m1"), map[string][]Window{"u1": open},
		snd(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r1", 1, "m1"),
		bad(4, KindBadSend, "u1", "r1", "m\x01", "", 2),
		bad(6, KindBadJoin, "u\x01", "r1", "", "", 1),
	)
	m, vs := Memberships(h)
	require.Empty(t, vs)
	assert.Nil(t, m["r1"]["u\x01"], "a malformed join derives no membership")
	got := Check(h)
	require.Len(t, got, 2)
	for _, v := range got {
		assert.Equal(t, PropBadNames, v.Property, v.String())
	}
	assert.Len(t, CheckPrefix(h), 2)
}

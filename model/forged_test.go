package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forgedSend is a send naming user with a forged credential, invoked at
// line-1 and ended at line with status err ("" for accepted at seq).
func forgedSend(line int, user, room, id, err string, seq uint64) Event {
	return Event{Kind: KindForgedSend, User: user, Room: room, MsgID: id, OK: err == "", Err: err, Seq: seq,
		Node: "n1", InvokedLine: line - 1, TraceLine: line}
}

func forgedJoin(line int, user, room, err string, from uint64) Event {
	return Event{Kind: KindForgedJoin, User: user, Room: room, OK: err == "", Err: err, Seq: from,
		Node: "n1", InvokedLine: line - 1, TraceLine: line}
}

func TestCheckForgedRejected(t *testing.T) {
	two := map[string][]Window{"u1": open, "u2": open}
	tests := []struct {
		name    string
		log     []LogEntry
		windows map[string][]Window
		events  []Event
		want    []Violation
	}{
		{"forged send rejected, nothing changed", logOf("m1"), two, []Event{
			snd(1, "u1", "r1", 1, "m1"), dlv(2, "u2", "r1", 1, "m1"),
			forgedSend(4, "u2", "r1", "f1", "Unauthenticated", 0),
		}, nil},
		{"unknown outcomes are allowed", logOf("m1"), two, []Event{
			forgedSend(4, "u2", "r1", "f1", "DeadlineExceeded", 0),
			forgedSend(6, "u2", "r1", "f2", "Unavailable", 0),
			forgedSend(8, "u2", "r1", "f3", "Pending", 0),
			forgedJoin(10, "u3", "r1", "Canceled", 0),
		}, nil},
		{"forged send accepted", withSender(logOf("m1", "f1"), 2, "u2"), two, []Event{
			forgedSend(4, "u2", "r1", "f1", "", 2),
		}, []Violation{
			{Property: PropForged, User: "u2", Room: "r1", Seq: 2, TraceLines: []int{4}},
			{Property: PropForged, User: "u2", Room: "r1", Seq: 2, TraceLines: []int{4}},
		}},
		{"forged send past authentication: not a member", logOf("m1"), two, []Event{
			forgedSend(4, "u3", "r1", "f1", "FailedPrecondition", 0),
		}, []Violation{{Property: PropForged, User: "u3", Room: "r1", TraceLines: []int{4}}}},
		{"forged send timed out but appended and delivered", withSender(logOf("m1", "f1"), 2, "u2"), two, []Event{
			forgedSend(4, "u2", "r1", "f1", "DeadlineExceeded", 0),
			dlv(6, "u1", "r1", 2, "f1"), dlv(7, "u2", "r1", 2, "f1"),
		}, []Violation{
			{Property: PropForged, User: "u2", Room: "r1", Seq: 2, TraceLines: []int{4}},
			{Property: PropForged, User: "u2", Room: "r1", TraceLines: []int{4, 6, 7}},
		}},
		{"forged join rejected", logOf("m1", "m2"), two, []Event{
			forgedJoin(4, "u3", "r1", "Unauthenticated", 0),
			snd(5, "u1", "r1", 2, "m2"),
		}, nil},
		{"the same id from another sender is another message", withSender(logOf("m1", "f1"), 2, "u1"), two, []Event{
			forgedSend(4, "u2", "r1", "f1", "Unauthenticated", 0),
			dlvP(5, "u2", "r1", 2, "f1", "u1", 7),
		}, nil},
		{"forged join accepted", logOf("m1"), two, []Event{
			forgedJoin(4, "u3", "r1", "", 2),
		}, []Violation{{Property: PropForged, User: "u3", Room: "r1", Seq: 2, TraceLines: []int{4}}}},
		{"forged join opened a window the user's acks never did", logOf("m1", "m2"), two, []Event{
			forgedJoin(4, "u3", "r1", "DeadlineExceeded", 0),
			snd(5, "u1", "r1", 2, "m2"), dlv(6, "u3", "r1", 2, "m2"),
		}, []Violation{{Property: PropForged, User: "u3", Room: "r1", Seq: 2, TraceLines: []int{4, 6}}}},
		{"a member's own deliveries after a forged join naming it are fine", logOf("m1", "m2"), two, []Event{
			forgedJoin(4, "u2", "r1", "Unauthenticated", 0),
			snd(5, "u1", "r1", 2, "m2"), dlv(6, "u2", "r1", 2, "m2"),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, tt.want, CheckForgedRejected(oneRoom(tt.log, tt.windows, tt.events...)))
		})
	}
}

// TestForgedCallsAreNotRealCalls: a forged send or join, even one the relay
// wrongly accepted, is not an ack the other checkers count: no message is
// owed for it, no window opens and no dispatch is judged.
func TestForgedCallsAreNotRealCalls(t *testing.T) {
	h := oneRoom(logFrom("u1", "m1"), map[string][]Window{"u1": open},
		snd(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r1", 1, "m1"),
		forgedSend(4, "u1", "r1", "f1", "", 2),
		forgedJoin(6, "u2", "r1", "", 1),
	)
	m, vs := Memberships(h)
	require.Empty(t, vs)
	assert.Nil(t, m["r1"]["u2"], "a forged join derives no membership")
	for _, check := range []func(*History) []Violation{CheckNoLoss, CheckWindows, CheckOrdering, CheckNoStray, CheckExactlyOnce, CheckWorkers, CheckTimely} {
		assert.Empty(t, check(h))
	}
	got := Check(h)
	require.Len(t, got, 2)
	for _, v := range got {
		assert.Equal(t, PropForged, v.Property, v.String())
	}
}

func TestCheckForgedRejectedDetails(t *testing.T) {
	got := CheckForgedRejected(oneRoom(withSender(logOf("m1", "f1"), 2, "u2"), map[string][]Window{"u1": open},
		forgedSend(4, "u2", "r1", "f1", "", 2), dlv(5, "u1", "r1", 2, "f1")))
	require.Len(t, got, 3)
	assert.Equal(t, "a send with a forged credential for u2 was accepted (seq 2)", got[0].Detail)
	assert.Equal(t, `the forged send "f1" is in the room log at seq 2 (sender u2)`, got[1].Detail)
	assert.Equal(t, `the forged send "f1" was delivered to u1 (1 deliveries)`, got[2].Detail)
}

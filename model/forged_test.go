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

// forged is a call of kind naming user (a relay's recipient) with a forged
// credential of shape cred, ended at line with status err ("" accepted).
func forged(kind Kind, line int, user, room, id, cred, err string) Event {
	return Event{Kind: kind, User: user, Room: room, MsgID: id, OK: err == "", Err: err, Cred: cred,
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
		{"every method rejected, whatever the shape", logOf("m1"), two, []Event{
			forged(KindForgedLeave, 4, "u2", "r1", "", "missing", "Unauthenticated"),
			forged(KindForgedCreateRoom, 6, "u2", "r9", "", "empty", "Unauthenticated"),
			forged(KindForgedConnect, 8, "u2", "", "", "truncated", "Unauthenticated"),
			forged(KindForgedRelay, 10, "u2", "r1", "f1", "wrong-case", "Unauthenticated"),
			forged(KindForgedRelayBulk, 12, "u2", "r1", "f2", "other-user", "DeadlineExceeded"),
			forged(KindForgedRelayStream, 14, "u2", "r1", "f3", "wrong-cluster", "Unauthenticated"),
		}, nil},
		{"forged leave, room creation and stream accepted", logOf("m1"), two, []Event{
			forged(KindForgedLeave, 4, "u2", "r1", "", "garbage", ""),
			forged(KindForgedCreateRoom, 6, "u2", "r9", "", "empty", ""),
			forged(KindForgedConnect, 8, "u2", "", "", "missing", ""),
		}, []Violation{
			{Property: PropForged, User: "u2", Room: "r1", TraceLines: []int{4}},
			{Property: PropForged, User: "u2", Room: "r9", TraceLines: []int{6}},
			{Property: PropForged, User: "u2", TraceLines: []int{8}},
		}},
		{"forged relay stream past authentication: an older node answered Unimplemented", logOf("m1"), two, []Event{
			forged(KindForgedRelayStream, 4, "u2", "r1", "f1", "wrong-cluster", "Unimplemented"),
		}, []Violation{{Property: PropForged, User: "u2", Room: "r1", TraceLines: []int{4}}}},
		{"forged relay accepted and delivered", logOf("m1"), two, []Event{
			forged(KindForgedRelayBulk, 4, "u2", "r1", "f1", "truncated", ""),
			dlv(5, "u2", "r1", 7, "f1"),
		}, []Violation{
			{Property: PropForged, User: "u2", Room: "r1", TraceLines: []int{4}},
			{Property: PropForged, User: "u2", Room: "r1", TraceLines: []int{4, 5}},
		}},
		{"forged relay stream timed out but delivered", logOf("m1"), two, []Event{
			forged(KindForgedRelayStream, 4, "u2", "r1", "f1", "missing", "DeadlineExceeded"),
			dlv(5, "u2", "r1", 7, "f1"),
		}, []Violation{{Property: PropForged, User: "u2", Room: "r1", TraceLines: []int{4, 5}}}},
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
		forged(KindForgedLeave, 8, "u1", "r1", "", "garbage", ""),
		forged(KindForgedConnect, 10, "u2", "", "", "garbage", ""),
		forged(KindForgedRelayStream, 12, "u1", "r1", "f2", "garbage", ""),
	)
	m, vs := Memberships(h)
	require.Empty(t, vs)
	assert.Nil(t, m["r1"]["u2"], "a forged join derives no membership")
	for _, check := range []func(*History) []Violation{CheckNoLoss, CheckWindows, CheckOrdering, CheckNoStray, CheckExactlyOnce, CheckWorkers, CheckTimely} {
		assert.Empty(t, check(h))
	}
	got := Check(h)
	require.Len(t, got, 5)
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

	got = CheckForgedRejected(oneRoom(logOf("m1"), map[string][]Window{"u1": open},
		forged(KindForgedRelayStream, 4, "u1", "r1", "f1", "wrong-cluster", "FailedPrecondition")))
	require.Len(t, got, 1)
	assert.Equal(t, "a relay-stream with a forged credential (wrong-cluster) for u1 was answered FailedPrecondition, not Unauthenticated: it got past authentication", got[0].Detail)
}

func TestForgedKinds(t *testing.T) {
	for _, k := range ForgedKinds {
		assert.True(t, k.Forged(), k)
	}
	for _, k := range []Kind{KindSend, KindJoin, KindConnect, KindDeliver} {
		assert.False(t, k.Forged(), k)
	}
}

// TestForgedEffectsReadTheDeliveryLog: the simulator records deliveries in
// the compact delivery log, not in Events; the effects are judged there
// too.
func TestForgedEffectsReadTheDeliveryLog(t *testing.T) {
	h := oneRoom(logOf("m1"), map[string][]Window{"u1": open},
		forged(KindForgedRelay, 4, "u1", "r1", "f1", "empty", "Unauthenticated"),
		forgedJoin(6, "u3", "r1", "Unauthenticated", 0))
	h.Deliveries = &DeliveryLog{}
	h.Deliveries.Add(Event{Kind: KindDeliver, User: "u1", Room: "r1", Seq: 9, MsgID: "f1", Node: "n1", TraceLine: 5, Time: 1})
	h.Deliveries.Add(Event{Kind: KindDeliver, User: "u3", Room: "r1", Seq: 1, MsgID: "m1", Node: "n1", TraceLine: 7, Time: 2})
	assertViolations(t, []Violation{
		{Property: PropForged, User: "u1", Room: "r1", TraceLines: []int{4, 5}},
		{Property: PropForged, User: "u3", Room: "r1", Seq: 1, TraceLines: []int{6, 7}},
	}, CheckForgedRejected(h))
}

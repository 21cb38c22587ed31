package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpected(t *testing.T) {
	h := &History{
		Events: append(
			withWindows("r1", map[string][]Window{"u1": {{From: 1, To: 3}, {From: 7, To: 9}}, "u2": {{From: 5}}}),
			withWindows("r2", map[string][]Window{"u1": {{From: 1}}})...),
		Final: Final{Logs: map[string][]LogEntry{"r1": logOf(msgs(10)...), "r2": logOf(msgs(2)...)}},
	}
	j := newJudge(h)
	tests := []struct {
		name, room, user string
		want             []uint64
	}{
		{"two closed windows", "r1", "u1", []uint64{1, 2, 3, 7, 8, 9}},
		{"open window", "r1", "u2", []uint64{5, 6, 7, 8, 9, 10}},
		{"not a member", "r1", "u3", nil},
		{"window beyond the log", "r2", "u1", []uint64{1, 2}},
		{"unknown room", "r9", "u1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, j.expected(tt.room, tt.user))
		})
	}
}

func TestCheckNoStray(t *testing.T) {
	log := logOf(msgs(9)...)
	ws := map[string][]Window{"u1": {{From: 1, To: 3}}, "u2": {{From: 1, To: 3}, {From: 7, To: 9}}}
	tests := []struct {
		name   string
		events []Event
		want   []Violation
	}{
		{"all deliveries inside the windows", []Event{
			dlv(10, "u1", "r1", 1, "m1"), dlv(11, "u1", "r1", 3, "m3"),
			dlv(12, "u2", "r1", 3, "m3"), dlv(13, "u2", "r1", 7, "m7"),
		}, nil},
		{"delivery after leave", []Event{
			dlv(10, "u1", "r1", 3, "m3"),
			{Kind: KindLeave, User: "u1", Room: "r1", Seq: 3, OK: true, TraceLine: 11},
			dlv(12, "u1", "r1", 4, "m4"),
		}, []Violation{{Property: PropNoStray, User: "u1", Room: "r1", Seq: 4, TraceLines: []int{12}}}},
		{"delivery between two windows", []Event{dlv(20, "u2", "r1", 5, "m5")},
			[]Violation{{Property: PropNoStray, User: "u2", Room: "r1", Seq: 5, TraceLines: []int{20}}}},
		{"seq not in the log", []Event{dlv(30, "u2", "r1", 10, "m10")},
			[]Violation{{Property: PropNoStray, User: "u2", Room: "r1", Seq: 10, TraceLines: []int{30}}}},
		{"msgid mismatch", []Event{dlv(40, "u1", "r1", 2, "mX")},
			[]Violation{{Property: PropNoStray, User: "u1", Room: "r1", Seq: 2, TraceLines: []int{40}}}},
		{"non-member", []Event{dlv(0, "u9", "r1", 1, "m1")},
			[]Violation{{Property: PropNoStray, User: "u9", Room: "r1", Seq: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckNoStray(oneRoom(log, ws, tt.events...))
			assertViolations(t, tt.want, got)
		})
	}
}

func TestCheckNoStrayDetails(t *testing.T) {
	ws := map[string][]Window{"u1": {{From: 1, To: 3}}}
	got := CheckNoStray(oneRoom(logOf(msgs(4)...), ws,
		dlv(1, "u1", "r1", 4, "m4"), dlv(2, "u1", "r1", 5, "m5"), dlv(3, "u1", "r1", 2, "mX")))
	require.Len(t, got, 3)
	assert.Equal(t, "delivered seq 4 outside the user's membership windows [1,3] (from its join/leave acks)", got[0].Detail)
	assert.Equal(t, "delivered seq 5, which is not in the room log (4 entries)", got[1].Detail)
	assert.Equal(t, `delivered msgid "mX" at seq 2 but the log holds "m2" there`, got[2].Detail)
}

func TestCheckExactlyOnce(t *testing.T) {
	log := logOf(msgs(3)...)
	ws := map[string][]Window{"u1": open}
	tests := []struct {
		name   string
		events []Event
		want   []Violation
	}{
		{"each delivered once", []Event{
			dlv(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r1", 2, "m2"), dlv(3, "u1", "r1", 3, "m3"),
		}, nil},
		{"duplicate across a reconnect", []Event{
			{Kind: KindConnect, User: "u1", Node: "n1", TraceLine: 1},
			dlv(2, "u1", "r1", 1, "m1"), dlv(3, "u1", "r1", 2, "m2"),
			{Kind: KindDisconnect, User: "u1", Node: "n1", TraceLine: 4},
			{Kind: KindConnect, User: "u1", Node: "n2", TraceLine: 5},
			{Kind: KindDeliver, User: "u1", Room: "r1", Node: "n2", Seq: 2, MsgID: "m2", FromLog: true, TraceLine: 6},
			dlv(7, "u1", "r1", 3, "m3"),
		}, []Violation{{Property: PropExactlyOnce, User: "u1", Room: "r1", Seq: 2, TraceLines: []int{3, 6}}}},
		{"missing cites the ack", []Event{
			snd(1, "u2", "r1", 1, "m1"), snd(2, "u2", "r1", 2, "m2"), snd(3, "u2", "r1", 3, "m3"),
			dlv(4, "u1", "r1", 1, "m1"), dlv(5, "u1", "r1", 3, "m3"),
		}, []Violation{{Property: PropExactlyOnce, User: "u1", Room: "r1", Seq: 2, TraceLines: []int{2}}}},
		{"strays are not counted", []Event{
			dlv(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r1", 2, "m2"), dlv(3, "u1", "r1", 3, "m3"),
			dlv(4, "u1", "r1", 4, "m4"), dlv(5, "u2", "r1", 1, "m1"),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, tt.want, CheckExactlyOnce(oneRoom(log, ws, tt.events...)))
		})
	}
}

func TestCheckExactlyOnceDetails(t *testing.T) {
	got := CheckExactlyOnce(oneRoom(logOf("m1", "m2"), map[string][]Window{"u1": open},
		dlv(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r1", 1, "m1")))
	require.Len(t, got, 2)
	assert.Equal(t, "exactly-once: user u1 room r1 seq 1: delivered 2 times (trace lines 1, 2)", got[0].String())
	assert.Equal(t, "exactly-once: user u1 room r1 seq 2: owed by the user's membership windows but never delivered", got[1].String())
}

// assertViolations compares the identifying fields and evidence of
// violations; Detail wording is checked by the *Details tests.
func assertViolations(t *testing.T, want, got []Violation) {
	t.Helper()
	for i := range got {
		assert.NotEmpty(t, got[i].Detail, "violation %d has no detail", i)
		got[i].Detail = ""
	}
	for i := range want {
		want[i].Detail = ""
	}
	assert.Equal(t, want, got)
}

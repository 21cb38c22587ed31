package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckNoLoss(t *testing.T) {
	tests := []struct {
		name   string
		log    []LogEntry
		events []Event
		want   []Violation
	}{
		{"every ack in the log, retry acked twice at one seq", logOf("m1", "m2"), []Event{
			snd(1, "u1", "r1", 1, "m1"), snd(2, "u2", "r1", 2, "m2"), snd(3, "u2", "r1", 2, "m2"),
		}, nil},
		{"failed sends are not judged", logOf("m1"), []Event{
			snd(1, "u1", "r1", 1, "m1"),
			{Kind: KindSend, User: "u1", Room: "r1", MsgID: "m2", Err: "unavailable", TraceLine: 2},
		}, nil},
		{"lost acked send", logOf("m1", "m2", "m3"), []Event{
			snd(1, "u1", "r1", 3, "m3"), snd(2, "u1", "r1", 4, "m4"),
		}, []Violation{{Property: PropNoLoss, User: "u1", Room: "r1", Seq: 4, TraceLines: []int{2}}}},
		{"another message at the acked seq", logOf("m1", "m9"), []Event{snd(5, "u1", "r1", 2, "m2")},
			[]Violation{{Property: PropNoLoss, User: "u1", Room: "r1", Seq: 2, TraceLines: []int{5}}}},
		{"send acked twice with different seqs", logOf("m1", "m2", "m3"), []Event{
			snd(7, "u1", "r1", 2, "m2"), snd(9, "u1", "r1", 3, "m2"),
		}, []Violation{{Property: PropNoLoss, User: "u1", Room: "r1", Seq: 3, TraceLines: []int{7, 9}}}},
		{"acked twice and at neither seq", logOf("m1", "m9", "m8"), []Event{
			snd(7, "u1", "r1", 2, "m2"), snd(9, "u1", "r1", 3, "m2"),
		}, []Violation{
			{Property: PropNoLoss, User: "u1", Room: "r1", Seq: 3, TraceLines: []int{7, 9}},
			{Property: PropNoLoss, User: "u1", Room: "r1", Seq: 2, TraceLines: []int{7, 9}},
		}},
		{"retry appended twice to the log", logFrom("u1", "m1", "m2", "m2"), []Event{
			snd(4, "u1", "r1", 2, "m2"),
		}, []Violation{{Property: PropNoLoss, User: "u1", Room: "r1", Seq: 3, TraceLines: []int{4}}}},
		{"the same id from two senders is two messages", withSender(logFrom("u1", "m1", "m1"), 2, "u2"), []Event{
			snd(4, "u1", "r1", 1, "m1"), snd(5, "u2", "r1", 2, "m1"),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, tt.want, CheckNoLoss(oneRoom(tt.log, nil, tt.events...)))
		})
	}
}

func TestCheckNoLossDetails(t *testing.T) {
	got := CheckNoLoss(oneRoom(logFrom("u1", "m1", "m1"), nil,
		snd(1, "u1", "r1", 1, "m1"), snd(2, "u1", "r1", 2, "m1"), snd(3, "u1", "r1", 4, "m4")))
	require.Len(t, got, 3)
	assert.Equal(t, `msgid "m1" was acked with different seqs 1, 2`, got[0].Detail)
	assert.Equal(t, `acked send "m4" at seq 4 is not in the room log (2 entries)`, got[1].Detail)
	assert.Equal(t, `msgid "m1" from u1 appears 2 times in the room log (seqs 1, 2)`, got[2].Detail)
}

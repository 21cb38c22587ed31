package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckOrdering(t *testing.T) {
	log := logOf(msgs(9)...)
	ws := map[string][]Window{
		"u1": open,
		"u2": {{From: 1, To: 3}, {From: 7, To: 9}},
		"u3": {{From: 5}},
	}
	tests := []struct {
		name   string
		events []Event
		want   []Violation
	}{
		{"in order", []Event{
			dlv(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r1", 2, "m2"), dlv(3, "u1", "r1", 3, "m3"),
		}, nil},
		{"7 after 3 across two windows is not a gap", []Event{
			dlv(1, "u2", "r1", 1, "m1"), dlv(2, "u2", "r1", 2, "m2"), dlv(3, "u2", "r1", 3, "m3"),
			dlv(4, "u2", "r1", 7, "m7"), dlv(5, "u2", "r1", 8, "m8"),
		}, nil},
		{"first delivery at the window start", []Event{dlv(1, "u3", "r1", 5, "m5")}, nil},
		{"gap filled later: one gap, then the fill out of order", []Event{
			dlv(10, "u1", "r1", 1, "m1"), dlv(11, "u1", "r1", 3, "m3"),
			dlv(12, "u1", "r1", 2, "m2"), dlv(13, "u1", "r1", 4, "m4"),
		}, []Violation{
			{Property: PropOrdering, User: "u1", Room: "r1", Seq: 3, TraceLines: []int{10, 11}},
			{Property: PropOrdering, User: "u1", Room: "r1", Seq: 2, TraceLines: []int{11, 12}},
		}},
		{"first delivery skips the window start", []Event{dlv(20, "u3", "r1", 6, "m6")},
			[]Violation{{Property: PropOrdering, User: "u3", Room: "r1", Seq: 6, TraceLines: []int{20}}}},
		{"gap inside the second window", []Event{
			dlv(1, "u2", "r1", 3, "m3"), dlv(2, "u2", "r1", 9, "m9"),
		}, []Violation{
			{Property: PropOrdering, User: "u2", Room: "r1", Seq: 3, TraceLines: []int{1}},
			{Property: PropOrdering, User: "u2", Room: "r1", Seq: 9, TraceLines: []int{1, 2}},
		}},
		{"duplicates and strays are left to their checkers", []Event{
			dlv(1, "u2", "r1", 1, "m1"), dlv(2, "u2", "r1", 2, "m2"), dlv(3, "u2", "r1", 2, "m2"),
			dlv(4, "u2", "r1", 3, "m3"), dlv(5, "u2", "r1", 5, "m5"), dlv(6, "u2", "r1", 1, "m1"),
			dlv(7, "u2", "r1", 7, "m7"), dlv(8, "u2", "r1", 12, "m12"),
		}, nil},
		{"users are judged apart", []Event{
			dlv(1, "u1", "r1", 1, "m1"), dlv(2, "u2", "r1", 1, "m1"),
			dlv(3, "u1", "r1", 2, "m2"), dlv(4, "u2", "r1", 2, "m2"),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, tt.want, CheckOrdering(oneRoom(log, ws, tt.events...)))
		})
	}
}

func TestCheckOrderingDetails(t *testing.T) {
	got := CheckOrdering(oneRoom(logOf(msgs(4)...), map[string][]Window{"u1": open},
		dlv(10, "u1", "r1", 1, "m1"), dlv(11, "u1", "r1", 4, "m4"), dlv(12, "u1", "r1", 2, "m2")))
	require.Len(t, got, 2)
	assert.Equal(t, "delivered seq 4 after seq 1, skipping owed seq(s) 2, 3", got[0].Detail)
	assert.Equal(t, "delivered seq 2 after seq 4", got[1].Detail)
}

func TestCheckOrderingRooms(t *testing.T) {
	h := &History{
		Events: withWindows("r1", map[string][]Window{"u1": open}, withWindows("r2", map[string][]Window{"u1": open},
			dlv(1, "u1", "r1", 1, "m1"), dlv(2, "u1", "r2", 1, "x1"),
			dlv(3, "u1", "r2", 2, "x2"), dlv(4, "u1", "r1", 2, "m2"),
		)...),
		Final: Final{Logs: map[string][]LogEntry{"r1": logOf("m1", "m2"), "r2": logOf("x1", "x2")}},
	}
	assert.Empty(t, CheckOrdering(h))
}

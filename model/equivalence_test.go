package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckModeEquivalence(t *testing.T) {
	single := &History{Mode: "single", Events: []Event{
		dlv(1, "u1", "r1", 1, "a"), dlv(2, "u1", "r1", 2, "b"), dlv(3, "u1", "r1", 3, "c"),
		dlv(4, "u2", "r1", 1, "a"),
	}}
	tests := []struct {
		name string
		bulk []Event
		want []Violation
	}{
		{"same sets, other seqs, order and duplicates", []Event{
			dlv(1, "u2", "r1", 2, "a"), dlv(2, "u1", "r1", 1, "b"),
			dlv(3, "u1", "r1", 3, "a"), dlv(4, "u1", "r1", 2, "c"), dlv(5, "u1", "r1", 2, "c"),
		}, nil},
		{"each run has what the other lacks", []Event{
			dlv(10, "u1", "r1", 1, "a"), dlv(11, "u1", "r1", 2, "b"),
			dlv(12, "u2", "r1", 1, "a"), dlv(13, "u2", "r1", 2, "z"), dlv(14, "u3", "r2", 1, "y"),
		}, []Violation{
			{Property: PropModeEquivalence, User: "u1", Room: "r1", TraceLines: []int{3}},
			{Property: PropModeEquivalence, User: "u2", Room: "r1", TraceLines: []int{13}},
			{Property: PropModeEquivalence, User: "u3", Room: "r2", TraceLines: []int{14}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bulk := &History{Mode: "bulk", Events: tt.bulk}
			assertViolations(t, tt.want, CheckModeEquivalence(single, bulk))
		})
	}
}

func TestCheckModeEquivalenceDetails(t *testing.T) {
	single := &History{Mode: "single", Events: []Event{dlv(1, "u1", "r1", 1, "a"), dlv(2, "u1", "r1", 2, "b")}}
	got := CheckModeEquivalence(single, &History{Mode: "bulk", Events: []Event{dlv(9, "u1", "r1", 1, "x")}})
	require.Len(t, got, 2)
	assert.Equal(t, `mode-equivalence: user u1 room r1: 2 message(s) delivered in the single run but not in the bulk run: a, b (trace lines of the single run) (trace lines 1, 2)`, got[0].String())
	assert.Equal(t, `mode-equivalence: user u1 room r1: 1 message(s) delivered in the bulk run but not in the single run: x (trace lines of the bulk run) (trace line 9)`, got[1].String())
}

// A room where a join overlapped a send in real time is not calm: which
// messages the joiner gets may depend on timing, so it is not compared.
func TestCheckModeEquivalenceSkipsUnsettledRooms(t *testing.T) {
	j := join(5, "u2", "r1", 2)
	j.Invoked, j.InvokedLine, j.Time = 10, 4, 30
	s := snd(6, "u1", "r1", 2, "b")
	s.Invoked, s.InvokedLine, s.Time = 20, 5, 40
	single := &History{Mode: "single", Events: []Event{j, s, dlv(7, "u2", "r1", 2, "b"), dlv(8, "u2", "r2", 1, "q")}}
	bulk := &History{Mode: "bulk", Events: []Event{dlv(9, "u2", "r2", 1, "q")}}
	assert.Equal(t, map[string]bool{"r1": true}, Unsettled(single))
	assert.Empty(t, CheckModeEquivalence(single, bulk))
	bulk.Events = nil
	got := CheckModeEquivalence(single, bulk)
	require.Len(t, got, 1, "r2 is calm and still compared")
	assert.Equal(t, "r2", got[0].Room)
}

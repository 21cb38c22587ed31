package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestViolationString(t *testing.T) {
	tests := []struct {
		name string
		v    Violation
		want string
	}{
		{"full", Violation{Property: PropExactlyOnce, User: "u3", Room: "r1", Seq: 7, Detail: "delivered 2 times", TraceLines: []int{120, 188}},
			"exactly-once: user u3 room r1 seq 7: delivered 2 times (trace lines 120, 188)"},
		{"one line", Violation{Property: PropNoStray, User: "u1", Room: "r1", Seq: 4, Detail: "x", TraceLines: []int{9}},
			"no-stray-delivery: user u1 room r1 seq 4: x (trace line 9)"},
		{"no context", Violation{Property: PropGoroutineLeak, Detail: "1 goroutine(s) left"},
			"no-goroutine-leaks: 1 goroutine(s) left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.v.String()) })
	}
}

func TestLines(t *testing.T) {
	assert.Equal(t, []int{3, 8, 12}, lines(12, 0, 3, 8, 3))
	assert.Nil(t, lines(0, 0))
}

func TestSummarize(t *testing.T) {
	assert.Equal(t, "no violations", Summarize(nil))
	assert.Equal(t, "1 violation: no-loss 1", Summarize([]Violation{{Property: PropNoLoss}}))
	vs := []Violation{{Property: PropOrdering}, {Property: PropExactlyOnce}, {Property: PropOrdering}, {Property: PropNoLoss}}
	assert.Equal(t, "4 violations: exactly-once 1, no-loss 1, per-room-ordering 2", Summarize(vs))
}

// badHistory breaks one property of each single-history checker.
func badHistory() *History {
	h := oneRoom(logOf("m1", "m2", "m3"), map[string][]Window{"u1": open, "u2": {{From: 1, To: 1}}},
		snd(1, "u2", "r1", 4, "m4"), // lost
		dlv(2, "u1", "r1", 2, "m2"), // gap (1 skipped), 1 and 3 missing
		dlv(3, "u2", "r1", 2, "m2"), // stray
		vanish(4, 0, "u1", "n1"),    // never closed
		dlv(5, "u2", "r1", 1, "m1"), // fine
		dlv(6, "u2", "r1", 1, "m1"), // duplicate
	)
	h.Final.LeftoverGoroutines = []string{"goroutine 7"}
	h.Samples = []Sample{{Node: "n1", Core: 1, Max: 2, Workers: 3, PeakRunning: 2, Goroutines: -1}}
	h.Events = append(h.Events, Event{Kind: KindPanic, Node: "n2", Err: "task deliver r1#1 u1: boom", TraceLine: 7})
	return h
}

func TestCheck(t *testing.T) {
	got := Check(badHistory())
	var props []string
	for _, v := range got {
		props = append(props, v.Property)
	}
	assert.Equal(t, []string{
		PropNoLoss, PropOrdering, PropNoStray,
		PropExactlyOnce, PropExactlyOnce, PropExactlyOnce,
		PropStreamLeak, PropGoroutineLeak, PropWorkers, PropPanics, PropContent,
	}, props)
	var seqs []uint64
	for _, v := range got[3:6] {
		seqs = append(seqs, v.Seq)
	}
	assert.Equal(t, []uint64{1, 3, 1}, seqs, "exactly-once sorted by room, user, seq")
	assert.Equal(t, "u2", got[5].User)
}

func TestCheckClean(t *testing.T) {
	h := oneRoom(logFrom("u1", "m1", "m2"), map[string][]Window{"u1": open},
		snd(1, "u1", "r1", 1, "m1"), snd(2, "u1", "r1", 2, "m2"),
		dlv(3, "u1", "r1", 1, "m1"), dlv(4, "u1", "r1", 2, "m2"),
	)
	h.Samples = []Sample{{Node: "n1", Core: 2, Max: 4, Workers: 2, PeakRunning: 4, Idle: true}}
	h.Tasks = []Tasks{{Node: "n1", Room: "r1", Seq: 1, Count: 1}, {Node: "n1", Room: "r1", Seq: 2, Count: 1}}
	assert.Empty(t, Check(h))
}

// TestCheckDeterministic guards against map iteration order reaching the
// output: many rooms and users, checked repeatedly, must print the same.
func TestCheckDeterministic(t *testing.T) {
	h := &History{Final: Final{Logs: map[string][]LogEntry{}}}
	for _, room := range names("r", 8) {
		h.Final.Logs[room] = logOf("m1", "m1", "m2")
		ws := map[string][]Window{}
		for _, user := range names("u", 8) {
			ws[user] = open
		}
		var sends []Event
		for _, user := range names("u", 8) {
			sends = append(sends, snd(0, user, room, 5, user))
		}
		h.Events = append(h.Events, withWindows(room, ws, sends...)...)
	}
	single, bulk := &History{}, &History{}
	for i, user := range names("u", 20) {
		single.Events = append(single.Events, dlv(i+1, user, names("r", 20)[i], 1, "a"))
		bulk.Events = append(bulk.Events, dlv(i+1, user, "r0", 1, "b"))
	}
	render := func() string {
		vs := append(Check(h), CheckModeEquivalence(single, bulk)...)
		out := Summarize(vs)
		for _, v := range vs {
			out += "\n" + v.String()
		}
		return out
	}
	first := render()
	require.Contains(t, first, "exactly-once")
	for range 20 {
		require.Equal(t, first, render())
	}
}

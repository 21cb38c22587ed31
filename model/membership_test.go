package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// call is a client call invoked at inv and completed at done (virtual ms),
// with the trace lines equal to the times so that real time is readable.
func call(e Event, inv, done int) Event {
	e.Invoked, e.InvokedLine = time.Duration(inv)*ms, inv
	e.Time, e.TraceLine = time.Duration(done)*ms, done
	return e
}

func sendCall(user string, seq uint64, id string, inv, done int) Event {
	return call(snd(0, user, "r1", seq, id), inv, done)
}

func failed(e Event, code string) Event {
	e.OK, e.Err, e.Seq = false, code, 0
	return e
}

func TestMemberships(t *testing.T) {
	s1, s2, s3, s4 := sendCall("u9", 1, "a", 10, 11), sendCall("u9", 2, "b", 20, 21), sendCall("u9", 3, "c", 40, 41), sendCall("u9", 4, "d", 60, 61)
	tests := []struct {
		name   string
		events []Event
		want   Membership
	}{
		{"join then leave", []Event{s1, call(join(0, "u1", "r1", 2), 15, 16), s2, s3, call(leave(0, "u1", "r1", 3), 50, 51), s4},
			Membership{Owed: []Window{{2, 3}}}},
		{"leave of an empty window", []Event{call(join(0, "u1", "r1", 2), 15, 16), call(leave(0, "u1", "r1", 1), 17, 18)},
			Membership{}},
		{"a join answered while open repeats its start", []Event{call(join(0, "u1", "r1", 1), 1, 2), s1, call(join(0, "u1", "r1", 1), 30, 31)},
			Membership{Owed: []Window{{From: 1}}}},
		{"a timed-out join resolved by the next join", []Event{s1, failed(call(join(0, "u1", "r1", 0), 15, 16), "DeadlineExceeded"), s2, s3,
			call(join(0, "u1", "r1", 3), 45, 46)},
			Membership{Owed: []Window{{From: 3}}, Maybe: []Window{{2, 2}}}},
		{"a join rejected for certain changes nothing", []Event{failed(call(join(0, "u1", "r1", 0), 15, 16), "NotFound")},
			Membership{}},
		{"a timed-out leave leaves the tail unsure", []Event{call(join(0, "u1", "r1", 1), 1, 2), s1, s2,
			failed(call(leave(0, "u1", "r1", 0), 30, 31), "Unavailable"), s3},
			Membership{Owed: []Window{{1, 2}}, Maybe: []Window{{From: 3}}}},
		{"a join still in flight", []Event{s1, failed(call(join(0, "u1", "r1", 0), 15, 0), "Pending")},
			Membership{Maybe: []Window{{From: 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, vs := Memberships(&History{Events: tt.events})
			assert.Empty(t, vs)
			require.NotNil(t, got["r1"]["u1"])
			assert.Equal(t, tt.want, *got["r1"]["u1"])
		})
	}
}

func TestCheckWindows(t *testing.T) {
	s1, s2 := sendCall("u9", 1, "a", 10, 11), sendCall("u9", 2, "b", 20, 21)
	tests := []struct {
		name     string
		events   []Event
		evidence []int
		detail   string
	}{
		{"a late joiner's window opens two seqs early", []Event{s1, s2, call(join(0, "u1", "r1", 1), 30, 31)}, []int{21, 31},
			`the window opens at seq 1, but seq 2 ("b") was acked at t=21ms, before the join was invoked at t=30ms`},
		{"a send after the join completed falls before the window", []Event{call(join(0, "u1", "r1", 3), 5, 6), s1}, []int{6, 11},
			`the window opens at seq 3, but "a", sent after the join completed, was acked with seq 1`},
		{"a send acked before the leave falls after the window", []Event{call(join(0, "u1", "r1", 1), 5, 6), s1, s2,
			call(leave(0, "u1", "r1", 1), 30, 31)}, []int{21, 31},
			`the window closes at seq 1, but "b", acked with seq 2 before the leave was invoked, falls after it`},
		{"a send after the leave completed falls inside the window", []Event{call(join(0, "u1", "r1", 1), 5, 6),
			call(leave(0, "u1", "r1", 2), 7, 8), s1, s2}, []int{8, 11},
			`the window closes at seq 2, but "a", sent after the leave completed, was acked with seq 1`},
		{"a join answered with another start while open", []Event{call(join(0, "u1", "r1", 1), 5, 6), call(join(0, "u1", "r1", 4), 7, 8)}, []int{6, 8},
			"join acked from_seq 4 while the window opened at seq 1 is open"},
		{"a leave answered not-a-member while the window is open", []Event{call(join(0, "u1", "r1", 1), 5, 6),
			failed(call(leave(0, "u1", "r1", 0), 7, 8), "FailedPrecondition")}, []int{6, 8},
			"leave answered FailedPrecondition (not a member) while the window opened at seq 1 is open"},
		{"the earliest try of a retried join counts", []Event{failed(call(join(0, "u1", "r1", 0), 5, 6), "DeadlineExceeded"), s1,
			call(join(0, "u1", "r1", 1), 30, 31)}, nil, ""},
		{"concurrent send and join may go either way", []Event{sendCall("u9", 1, "a", 10, 20), call(join(0, "u1", "r1", 1), 15, 25)}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckWindows(&History{Events: tt.events})
			if tt.detail == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, PropWindows, got[0].Property)
			assert.Equal(t, tt.detail, got[0].Detail)
			assert.Equal(t, tt.evidence, got[0].TraceLines)
		})
	}
}

// Deliveries are judged against the windows the acks give, not against
// anything the relay stores: a delivery inside a window that is only
// possible is neither owed nor stray.
func TestDeliveriesAgainstDerivedWindows(t *testing.T) {
	events := []Event{
		sendCall("u9", 1, "a", 10, 11),
		failed(call(join(0, "u1", "r1", 0), 15, 16), "DeadlineExceeded"),
		sendCall("u9", 2, "b", 20, 21), sendCall("u9", 3, "c", 40, 41),
		call(join(0, "u1", "r1", 3), 45, 46),
		call(dlv(0, "u1", "r1", 2, "b"), 50, 50), call(dlv(0, "u1", "r1", 3, "c"), 51, 51),
		call(dlv(0, "u1", "r1", 1, "a"), 52, 52),
	}
	h := &History{Events: events, Final: Final{Logs: map[string][]LogEntry{"r1": logOf("a", "b", "c")}}}
	stray := CheckNoStray(h)
	require.Len(t, stray, 1)
	assert.Equal(t, uint64(1), stray[0].Seq)
	assert.Empty(t, CheckExactlyOnce(h))
	h.Events = h.Events[:5]
	missing := CheckExactlyOnce(h)
	require.Len(t, missing, 1, "seq 2 is only possible; seq 3 is owed")
	assert.Equal(t, uint64(3), missing[0].Seq)
}

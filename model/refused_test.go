package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mixedRoom is liveRoom (u1 sends seq 1 on n1 at 1s, u2 on n2 waits for
// it) with u2's delivery extra, the send's payload of size bytes, and the
// limits given (n1 first, then n2's incarnations).
func mixedRoom(extra Event, size int, mode string, limits ...Limits) *History {
	h := liveRoom(at(dlv(0, "u1", "r1", 1, "a"), 1003), extra)
	h.Mode = mode
	for i := range h.Events {
		if h.Events[i].Kind == KindSend {
			h.Events[i].Size = size
		}
	}
	h.Limits = limits
	return h
}

func TestCheckTimelyMixedLimits(t *testing.T) {
	late := at(dlv(0, "u2", "r1", 1, "a"), 4000)
	late.FromLog = true
	n1 := Limits{Node: "n1", MaxPayload: 4096, MaxRecipients: 1000}
	small := Limits{Node: "n2", MaxPayload: 64, MaxRecipients: 1000}
	few := Limits{Node: "n2", MaxPayload: 4096, MaxRecipients: 0}
	same := Limits{Node: "n2", MaxPayload: 4096, MaxRecipients: 1000}
	const why = "connected on n2 with no fault on the path from n1, but delivered 3s after the send was invoked (from the log); bound 100ms"
	tests := []struct {
		name   string
		h      *History
		detail string
	}{
		{"a payload over the receiver's limit is owed through the catch-up only",
			mixedRoom(late, 100, "bulk", n1, small), ""},
		{"one within it is owed live", mixedRoom(late, 64, "bulk", n1, small), why},
		{"a receiver with the sender's limits is owed live", mixedRoom(late, 100, "bulk", n1, same), why},
		{"a bulk call naming more recipients than the receiver takes is refused",
			mixedRoom(late, 10, "bulk", n1, few), ""},
		{"in single mode a call names one recipient",
			mixedRoom(late, 10, "single", n1, Limits{Node: "n2", MaxPayload: 4096, MaxRecipients: 1}), why},
		{"the limits of an incarnation replaced before the send do not count",
			mixedRoom(late, 100, "bulk", n1, small, Limits{Node: "n2", From: 500 * ms, MaxPayload: 4096, MaxRecipients: 1000}), why},
		{"those of one started before the deadline do",
			mixedRoom(late, 100, "bulk", n1, same, Limits{Node: "n2", From: 1050 * ms, MaxPayload: 64, MaxRecipients: 1000}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckTimely(tt.h)
			if tt.detail == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, "u2", got[0].User)
			assert.Equal(t, tt.detail, got[0].Detail)
		})
	}
}

// A refused message costs itself alone: the next message on the same path,
// within the limits, is owed live.
func TestCheckTimelyRefusalCostsItsMessageAlone(t *testing.T) {
	h := mixedRoom(at(dlv(0, "u2", "r1", 1, "a"), 4000), 100, "stream",
		Limits{Node: "n1", MaxPayload: 4096, MaxRecipients: 1000}, Limits{Node: "n2", MaxPayload: 64, MaxRecipients: 1000})
	second := sendCall("u1", 2, "b", 1010, 1012)
	second.Size = 10
	h.Events = append(h.Events, second, at(dlv(0, "u1", "r1", 2, "b"), 1013), at(dlv(0, "u2", "r1", 2, "b"), 4001))
	h.Final.Logs["r1"] = logOf("a", "b")
	got := CheckTimely(h)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(2), got[0].Seq)
	assert.Equal(t, time.Duration(0), h.Limits[0].From)
}

// An overlapping restart excuses every path while it lasts and for its
// own recovery after (from the config: what a correct relay needs), not
// for the default recovery of a crash.
func TestCheckTimelyOverlapRecovery(t *testing.T) {
	late := at(dlv(0, "u2", "r1", 1, "a"), 4000)
	overlap := func(toMs int) *History {
		h := liveRoom(at(dlv(0, "u1", "r1", 1, "a"), 1003), late)
		h.Recovery[FaultOverlap] = 300 * ms
		h.Faults = []Fault{{From: 100 * ms, To: time.Duration(toMs) * ms, Kind: FaultOverlap, Nodes: []string{"n2"}}}
		return h
	}
	assert.Empty(t, CheckTimely(overlap(700)), "the recovery reaches the send")
	got := CheckTimely(overlap(500))
	require.Len(t, got, 1, "ended 400ms before the send's window: a crash's 5s would excuse it, the overlap's 300ms does not")
	assert.Equal(t, "u2", got[0].User)
}

package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledAside is liveRoom (u1 sends seq 1 of r1 at 1s; u2 on n2 is owed
// it live) with u3, who shares no room with u1 or u2, stalled from 500ms
// for good; extra are more events.
func stalledAside(extra ...Event) *History {
	h := liveRoom(append([]Event{join(3, "u3", "r9", 1)}, extra...)...)
	h.SendBound = 2 * time.Second
	h.Faults = append(h.Faults, Fault{From: 500 * ms, To: -1, Kind: FaultStall, User: "u3"})
	return h
}

func TestCheckIsolation(t *testing.T) {
	u1got := at(dlv(0, "u1", "r1", 1, "a"), 1003)
	t.Run("a user apart from the stalled client gets its message in time", func(t *testing.T) {
		assert.Empty(t, CheckIsolation(stalledAside(u1got, at(dlv(0, "u2", "r1", 1, "a"), 1050))))
	})
	t.Run("late for a user who shares no room with the stalled client", func(t *testing.T) {
		vs := CheckIsolation(stalledAside(u1got, at(dlv(0, "u2", "r1", 1, "a"), 3000)))
		require.Len(t, vs, 1)
		assert.Equal(t, PropIsolation, vs[0].Property)
		assert.Equal(t, "u2", vs[0].User)
		assert.Contains(t, vs[0].Detail, "u3's client was under a stall fault")
	})
	t.Run("a room-mate of the stalled client is not judged", func(t *testing.T) {
		h := stalledAside(u1got, at(dlv(0, "u2", "r1", 1, "a"), 3000), join(4, "u3", "r1", 1))
		assert.Empty(t, CheckIsolation(h))
	})
	t.Run("another fault on the path excuses it", func(t *testing.T) {
		h := stalledAside(u1got, at(dlv(0, "u2", "r1", 1, "a"), 3000))
		h.Faults = append(h.Faults, Fault{From: 900 * ms, To: 950 * ms, Kind: FaultPause, Nodes: []string{"n2"}})
		assert.Empty(t, CheckIsolation(h))
	})
	t.Run("no client fault: nothing judged", func(t *testing.T) {
		h := liveRoom(u1got, at(dlv(0, "u2", "r1", 1, "a"), 3000))
		assert.Empty(t, CheckIsolation(h))
	})
	t.Run("another user's send held past its bound", func(t *testing.T) {
		slow := sendCall("u2", 2, "b", 1100, 3500)
		slow.Tries = 2
		h := stalledAside(u1got, at(dlv(0, "u2", "r1", 1, "a"), 1050), slow, at(dlv(0, "u1", "r1", 2, "b"), 3600), at(dlv(0, "u2", "r1", 2, "b"), 3600))
		h.Final.Logs["r1"] = logOf("a", "b")
		vs := CheckIsolation(h)
		require.NotEmpty(t, vs)
		assert.Contains(t, vs[0].Detail, "u2's send took 2.4s in 2 tries")
		// A per-operation fault in its stretch excuses it.
		h.Faults = append(h.Faults, Fault{From: 1200 * ms, To: 1200 * ms, Kind: FaultDropRequest, Op: true, Msg: "r1#9"})
		for _, v := range CheckIsolation(h) {
			assert.NotContains(t, v.Detail, "send took")
		}
	})
}

func TestCheckNoUnfairCut(t *testing.T) {
	cut := Event{Kind: KindDisconnect, User: "u2", Node: "n2", Err: "ResourceExhausted", Time: 4 * time.Second, TraceLine: 9}
	h := &History{Events: []Event{cut}, Recovery: map[FaultKind]time.Duration{"": 5 * time.Second}}
	vs := CheckNoUnfairCut(h)
	require.Len(t, vs, 1)
	assert.Equal(t, PropUnfairCut, vs[0].Property)
	h.Faults = []Fault{{From: 2 * time.Second, To: 3 * time.Second, Kind: FaultStall, User: "u2"}}
	assert.Empty(t, CheckNoUnfairCut(h), "a stalled client may be cut")
	h.Faults = []Fault{{From: 2 * time.Second, To: 3 * time.Second, Kind: FaultStall, User: "u1"}}
	assert.Len(t, CheckNoUnfairCut(h), 1, "another client's stall is no excuse")
	h.Faults = []Fault{{From: 2 * time.Second, To: 3 * time.Second, Kind: FaultPause, Nodes: []string{"n2"}}}
	assert.Empty(t, CheckNoUnfairCut(h), "a pause of the session's node holds its pump")
}

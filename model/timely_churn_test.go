package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// churnRoom is a fault-free history (History.FaultFree) of room r1 under
// membership and connection churn: u1 sends seq 1 on n1 at t=1s (acked
// 1.002s, bound 100ms: the window runs from 900ms to 1.1s). u2 is a member
// connected on n2 from 1ms through the whole window: the member the send is
// owed to live. Around it, the churn a churn-only run makes:
//   - u3, a member connected on n1, disconnects at 1.05s (inside the window);
//   - u4, a member connected on n2, moves to n3 at 1.04s-1.06s (a connect
//     closes its stream on n2 first);
//   - u5 joined the room racing the send, and its join's window starts at
//     seq 2 (the send was sequenced first): seq 1 is not owed to it;
//   - u6, a member, connected on n3 at 950ms, inside the window.
//
// extra are deliveries (u1's own is in time).
func churnRoom(extra ...Event) *History { return churnHistory(true, extra...) }

// churnHistory is churnRoom, or with churn false the same users with none
// of that churn: each of u3..u6 a member connected through the window.
func churnHistory(churn bool, extra ...Event) *History {
	conn := func(user, node string, inv, done int) Event {
		return call(Event{Kind: KindConnect, User: user, Node: node, OK: true}, inv, done)
	}
	disc := func(user, node string, inv, done int) Event {
		return call(Event{Kind: KindDisconnect, User: user, Node: node}, inv, done)
	}
	events := []Event{
		conn("u1", "n1", 1, 1), conn("u2", "n2", 1, 1), conn("u3", "n1", 1, 1), conn("u4", "n2", 1, 1), conn("u5", "n3", 1, 1),
	}
	windows := map[string][]Window{"u1": open, "u2": open, "u3": open, "u4": open, "u5": open, "u6": open}
	if churn {
		events = append(events, conn("u6", "n3", 940, 950))
		windows["u5"] = []Window{{From: 2}}
	} else {
		events = append(events, conn("u6", "n3", 1, 1))
	}
	events = append(events, sendCall("u1", 1, "a", 1000, 1002))
	if churn {
		events = append(events,
			disc("u4", "n2", 1040, 1040), conn("u4", "n3", 1040, 1060),
			disc("u3", "n1", 1050, 1050))
	}
	events = append(events, at(dlv(0, "u1", "r1", 1, "a"), 1003))
	return &History{
		Mode:      "bulk",
		Events:    withWindows("r1", windows, append(events, extra...)...),
		Final:     Final{Logs: map[string][]LogEntry{"r1": logOf("a")}},
		LiveBound: 100 * ms,
		Recovery:  map[FaultKind]time.Duration{"": 5 * time.Second},
		FaultFree: true,
	}
}

// TestTimelyFaultFreeUnderChurn: in a run with no fault, churn excuses the
// members it touched in the window and no one else; the member connected
// through the window is owed the message live within the bound.
func TestTimelyFaultFreeUnderChurn(t *testing.T) {
	u2 := at(dlv(0, "u2", "r1", 1, "a"), 1020)
	late := at(dlv(0, "u2", "r1", 1, "a"), 4000)
	lateFromLog := late
	lateFromLog.FromLog = true
	const lateDetail = "connected on n2 through the whole window, in a run with no fault (nothing excuses it), but delivered 3s after the send was invoked; bound 100ms"

	t.Run("churned members excused, the stable member in time", func(t *testing.T) {
		assert.Empty(t, CheckTimely(churnRoom(u2)))
	})
	t.Run("the stable member late while others churn", func(t *testing.T) {
		got := CheckTimely(churnRoom(late))
		require.Len(t, got, 1)
		assert.Equal(t, "u2", got[0].User)
		assert.Equal(t, lateDetail, got[0].Detail)
	})
	t.Run("the stable member's catch-up is late too", func(t *testing.T) {
		got := CheckTimely(churnRoom(lateFromLog))
		require.Len(t, got, 1)
		assert.Equal(t, "u2", got[0].User)
		assert.Contains(t, got[0].Detail, "(from the log)")
	})
	t.Run("the stable member never served", func(t *testing.T) {
		got := CheckTimely(churnRoom())
		require.Len(t, got, 1)
		assert.Equal(t, "u2", got[0].User)
		assert.Contains(t, got[0].Detail, "never delivered")
	})
	t.Run("without their churn, each of the others is owed it too", func(t *testing.T) {
		// The excuses above are churn's, not a blanket: the same members
		// with no churn are judged, and none of them got the message.
		got := CheckTimely(churnHistory(false, u2))
		var users []string
		for _, v := range got {
			users = append(users, v.User)
			assert.Contains(t, v.Detail, "in a run with no fault (nothing excuses it), but never delivered")
		}
		assert.Equal(t, []string{"u3", "u4", "u5", "u6"}, users)
	})
}

// TestTimelyFaultFreeClosesFaultExcuses: the excuses that stand for a
// fault are closed in a fault-free run — a retried send (the client
// retried a send no fault touched) is judged from its first invocation —
// while what is not a fault keeps its allowance: a receiver's refusal of
// another item on the link (stream-refused, a smaller limit during a
// config rollout) delays the link's items by its recovery.
func TestTimelyFaultFreeClosesFaultExcuses(t *testing.T) {
	u2 := at(dlv(0, "u2", "r1", 1, "a"), 1020)
	late := at(dlv(0, "u2", "r1", 1, "a"), 4000)
	retried := func(h *History) *History {
		for i := range h.Events {
			if h.Events[i].Kind == KindSend {
				h.Events[i].Tries = 2
			}
		}
		return h
	}
	t.Run("a retried send is excused when faults may have made it retry", func(t *testing.T) {
		h := retried(churnRoom(late))
		h.FaultFree = false
		assert.Empty(t, CheckTimely(h))
	})
	t.Run("not in a fault-free run", func(t *testing.T) {
		got := CheckTimely(retried(churnRoom(late)))
		require.Len(t, got, 1)
		assert.Equal(t, "u2", got[0].User)
	})
	t.Run("a retried send in time passes", func(t *testing.T) {
		assert.Empty(t, CheckTimely(retried(churnRoom(u2))))
	})
	t.Run("a fault record does not excuse what the harness says had no fault", func(t *testing.T) {
		h := churnRoom(late)
		h.Faults = []Fault{{From: 200 * ms, To: 900 * ms, Kind: FaultCrash, Nodes: []string{"n2"}}}
		h.FaultFree = false
		assert.Empty(t, CheckTimely(h), "the same record excuses it in a faulted run")
		h.FaultFree = true
		assert.Len(t, CheckTimely(h), 1)
	})
	refused := func(deliveredMs int) *History {
		h := churnRoom(at(dlv(0, "u2", "r1", 1, "a"), deliveredMs))
		h.Recovery[FaultStreamRefused] = 700 * ms
		h.Faults = []Fault{{From: 1010 * ms, To: 1010 * ms, Kind: FaultStreamRefused, Nodes: []string{"n1", "n2"}}}
		return h
	}
	t.Run("a stream refusal on the link delays by its recovery", func(t *testing.T) {
		assert.Empty(t, CheckTimely(refused(1500)))
	})
	t.Run("not longer", func(t *testing.T) {
		got := CheckTimely(refused(1900))
		require.Len(t, got, 1)
		assert.Equal(t, "connected on n2; the relay stream from n1 broke at t=1.01s and its items were due again within 800ms, but delivered 900ms after the send was invoked", got[0].Detail)
	})
	t.Run("no stale-link allowance without a fault phase", func(t *testing.T) {
		h := churnRoom(at(dlv(0, "u2", "r1", 1, "a"), 1500))
		h.Mode, h.StaleLinkDelay = "stream", 500*ms
		got := CheckTimely(h)
		require.Len(t, got, 1)
		assert.Contains(t, got[0].Detail, "in a run with no fault")
	})
}

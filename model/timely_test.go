package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveRoom: u1 and u2 are members of r1 from seq 1; u1 is connected to n1
// and u2 to n2 from t=1ms; u1 sends seq 1 on n1 at t=1s (acked 1.002s).
func liveRoom(extra ...Event) *History {
	conn := func(user, node string, line int) Event {
		return Event{Kind: KindConnect, User: user, Node: node, OK: true, Time: ms, TraceLine: line}
	}
	send := sendCall("u1", 1, "a", 1000, 1002)
	events := append([]Event{conn("u1", "n1", 1), conn("u2", "n2", 2), send}, extra...)
	return &History{
		Events:    withWindows("r1", map[string][]Window{"u1": open, "u2": open}, events...),
		Final:     Final{Logs: map[string][]LogEntry{"r1": logOf("a")}},
		LiveBound: 100 * ms,
		Recovery:  map[FaultKind]time.Duration{"": 5 * time.Second},
	}
}

// breaks is liveRoom with the deliveries extra and a stream break on the
// link n1->n2 at each of the given milliseconds (resend recovery 200ms, so
// a break at t stretches the deadline to t+300ms).
func breaks(extra Event, atMs ...int) *History {
	h := liveRoom(at(dlv(0, "u1", "r1", 1, "a"), 1003), extra)
	h.Recovery["stream-break"] = 200 * ms
	h.Recovery["stream-giveup"] = 5 * time.Second
	for _, m := range atMs {
		t := time.Duration(m) * ms
		h.Faults = append(h.Faults, Fault{From: t, To: t, Kind: "stream-break", Nodes: []string{"n1", "n2"}})
	}
	return h
}

// staleRoom is liveRoom where u2 was first connected to n1, the sender's
// node, and vanished from it at 840ms before it connected to n2 at 850ms
// (keep-alive bound keepAlive); extra are the deliveries after u1's.
func staleRoom(extra Event, keepAlive time.Duration) *History {
	h := liveRoom(at(dlv(0, "u1", "r1", 1, "a"), 1003), extra)
	for i := range h.Events {
		if h.Events[i].Kind == KindConnect && h.Events[i].User == "u2" {
			h.Events[i].Node = "n1"
		}
	}
	h.Events = append(h.Events,
		Event{Kind: KindDisconnect, User: "u2", Node: "n1", Vanish: true, Time: 840 * ms, Invoked: 840 * ms},
		Event{Kind: KindConnect, User: "u2", Node: "n2", OK: true, Time: 850 * ms, Invoked: 850 * ms})
	h.KeepAliveBound = keepAlive
	return h
}

// brokenWith is breaks(late, 1010, 1200) with one more fault f.
func brokenWith(f Fault) *History {
	h := breaks(at(dlv(0, "u2", "r1", 1, "a"), 4000), 1010, 1200)
	h.Faults = append(h.Faults, f)
	return h
}

func at(e Event, msAt int) Event {
	e.Time, e.TraceLine = time.Duration(msAt)*ms, msAt
	return e
}

func TestCheckTimely(t *testing.T) {
	u1 := at(dlv(0, "u1", "r1", 1, "a"), 1003)
	u2 := at(dlv(0, "u2", "r1", 1, "a"), 1020)
	late := at(dlv(0, "u2", "r1", 1, "a"), 4000)
	fromLog := u2
	fromLog.FromLog = true
	tests := []struct {
		name   string
		h      *History
		detail string
	}{
		{"both live within the bound", liveRoom(u1, u2), ""},
		{"from the log within the bound (a gap fill)", liveRoom(u1, fromLog), ""},
		{"a remote member waits for the catch-up", liveRoom(u1, late),
			"connected on n2 with no fault on the path from n1, but delivered 3s after the send was invoked; bound 100ms"},
		{"never delivered", liveRoom(u1),
			"connected on n2 with no fault on the path from n1, but never delivered; bound 100ms"},
		{"a crash of the member's node excuses it", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: 200 * ms, To: 900 * ms, Kind: "crash", Nodes: []string{"n2"}}}
			return h
		}(), ""},
		{"a fault that ended long before does not", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: 0, To: 0, Kind: "pause", Nodes: []string{"n2"}}}
			h.Recovery = map[FaultKind]time.Duration{"": 500 * ms}
			return h
		}(), "connected on n2 with no fault on the path from n1, but delivered 3s after the send was invoked; bound 100ms"},
		{"a per-operation fault on the message excuses it", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: time.Second, To: time.Second, Kind: "drop-request", Op: true, Nodes: []string{"n1", "n2"}, Msg: "r1#1"}}
			return h
		}(), ""},
		{"a crash of a third node excuses it too (relays to it hold workers)", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: time.Second, To: 2 * time.Second, Kind: "crash", Nodes: []string{"n3"}}}
			return h
		}(), ""},
		{"another user's vanish does not excuse it", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: time.Second, To: time.Second, Kind: "vanish", User: "u7"}}
			return h
		}(), "connected on n2 with no fault on the path from n1, but delivered 3s after the send was invoked; bound 100ms"},
		{"a per-operation fault on a link of other nodes does not excuse it", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: time.Second, To: time.Second, Kind: "drop-request", Op: true, Nodes: []string{"n3", "n4"}, Msg: "r9#1"}}
			return h
		}(), "connected on n2 with no fault on the path from n1, but delivered 3s after the send was invoked; bound 100ms"},
		{"a break on the link delays the bound by its recovery", func() *History {
			h := breaks(at(dlv(0, "u2", "r1", 1, "a"), 1290), 1010)
			return h
		}(), ""},
		{"breaks chain: each one inside the stretched window stretches it again", func() *History {
			return breaks(at(dlv(0, "u2", "r1", 1, "a"), 1550), 1010, 1300)
		}(), ""},
		{"late past the last break's window", func() *History {
			return breaks(late, 1010, 1300)
		}(), "connected on n2; the relay stream from n1 broke at t=1.3s and its items were due again within 300ms, but delivered 3s after the send was invoked"},
		{"a break after the stretched window does not stretch it", func() *History {
			return breaks(late, 1010, 1700)
		}(), "connected on n2; the relay stream from n1 broke at t=1.01s and its items were due again within 300ms, but delivered 3s after the send was invoked"},
		{"a recv-break delays by its own recovery (linger plus resend), it does not excuse", func() *History {
			h := breaks(at(dlv(0, "u2", "r1", 1, "a"), 1500), 1010)
			h.Faults[0].Kind = FaultRecvBreak
			h.Recovery[FaultRecvBreak] = 700 * ms
			return h
		}(), ""},
		{"a member late past a recv-break's window", func() *History {
			h := breaks(late, 1010)
			h.Faults[0].Kind = FaultRecvBreak
			h.Recovery[FaultRecvBreak] = 700 * ms
			return h
		}(), "connected on n2; the relay stream from n1 broke at t=1.01s and its items were due again within 800ms, but delivered 3s after the send was invoked"},
		{"a give-up after the first deadline, inside the window breaks stretched, excuses it", brokenWith(Fault{From: 1450 * ms, To: 1450 * ms, Kind: "stream-giveup", Nodes: []string{"n1", "n2"}}), ""},
		{"a give-up on another link does not", brokenWith(Fault{From: 1450 * ms, To: 1450 * ms, Kind: "stream-giveup", Nodes: []string{"n1", "n3"}}), "connected on n2; the relay stream from n1 broke at t=1.2s and its items were due again within 300ms, but delivered 3s after the send was invoked"},
		{"a pause of the member's node in the stretched window excuses it", brokenWith(Fault{From: 1400 * ms, To: 1450 * ms, Kind: "pause", Nodes: []string{"n2"}}), ""},
		{"a route flush in the stretched window does not (the item is past routing)", brokenWith(Fault{From: 1400 * ms, To: 1400 * ms, Kind: "route-flush", Redis: true}), "connected on n2; the relay stream from n1 broke at t=1.2s and its items were due again within 300ms, but delivered 3s after the send was invoked"},
		{"nor a crash of a third node (no worker holds a queued item)", brokenWith(Fault{From: 1400 * ms, To: 1450 * ms, Kind: "pause", Nodes: []string{"n3"}}), "connected on n2; the relay stream from n1 broke at t=1.2s and its items were due again within 300ms, but delivered 3s after the send was invoked"},
		{"a route flush before the first deadline still excuses it", brokenWith(Fault{From: 1050 * ms, To: 1050 * ms, Kind: "route-flush", Redis: true}), ""},
		{"a vanished stream on the sender's node that its keep-alive may not have reaped excuses it", staleRoom(late, time.Second), ""},
		{"one the keep-alive had surely reaped does not", staleRoom(late, 100*ms),
			"connected on n2 with no fault on the path from n1, but delivered 3s after the send was invoked; bound 100ms"},
		{"a member who connected just before is not judged", func() *History {
			h := liveRoom(u1)
			h.Events[3].Time = 950 * ms // u2's connect
			return h
		}(), ""},
		{"after the heal and settle time a crash's recovery excuses nothing", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: 200 * ms, To: 900 * ms, Kind: "crash", Nodes: []string{"n2"}}}
			h.StrictFrom = 950 * ms
			return h
		}(), "connected on n2, sent after the heal and settle time (t=950ms: no fault excuses it), but delivered 3s after the send was invoked; bound 100ms"},
		{"nor a give-up on the link", func() *History {
			h := brokenWith(Fault{From: 1450 * ms, To: 1450 * ms, Kind: "stream-giveup", Nodes: []string{"n1", "n2"}})
			h.StrictFrom = time.Second
			return h
		}(), "connected on n2, sent after the heal and settle time (t=1s: no fault excuses it), but delivered 3s after the send was invoked; bound 100ms"},
		{"a strict stream relay may wait for a stale link's linger", func() *History {
			h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), 1500))
			h.Mode, h.StrictFrom, h.StaleLinkDelay = "stream", time.Second, 500*ms
			h.Versions = []Version{{Node: "n2", From: 0, Protocol: 3}, {Node: "n2", From: 500 * ms, Protocol: 3}}
			return h
		}(), ""},
		{"not longer", func() *History {
			h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), 1700))
			h.Mode, h.StrictFrom, h.StaleLinkDelay = "stream", time.Second, 500*ms
			return h
		}(), "connected on n2, sent after the heal and settle time (t=1s: no fault excuses it), but delivered 700ms after the send was invoked; bound 100ms"},
		{"nor in bulk mode", func() *History {
			h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), 1500))
			h.Mode, h.StrictFrom, h.StaleLinkDelay = "bulk", time.Second, 500*ms
			return h
		}(), "connected on n2, sent after the heal and settle time (t=1s: no fault excuses it), but delivered 500ms after the send was invoked; bound 100ms"},
		{"a fault-phase stream relay to a node restarted earlier may wait for a stale link's linger", func() *History {
			h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), 1500))
			h.Mode, h.StaleLinkDelay = "stream", 500*ms
			h.Recovery["restart"] = 300 * ms // over before the send's window
			h.Faults = []Fault{{From: 200 * ms, To: 200 * ms, Kind: "restart", Nodes: []string{"n2"}}}
			return h
		}(), ""},
		{"not when the earlier fault touched neither end of its link", func() *History {
			h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), 1500))
			h.Mode, h.StaleLinkDelay = "stream", 500*ms
			h.Recovery["restart"] = 300 * ms // over before the send's window
			h.Faults = []Fault{{From: 200 * ms, To: 200 * ms, Kind: "restart", Nodes: []string{"n3"}}}
			return h
		}(), "connected on n2 with no fault on the path from n1, but delivered 500ms after the send was invoked; bound 100ms"},
		{"nor when it came after the send", func() *History {
			h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), 1500))
			h.Mode, h.StaleLinkDelay = "stream", 500*ms
			h.Faults = []Fault{{From: 2 * time.Second, To: 2 * time.Second, Kind: "restart", Nodes: []string{"n2"}}}
			return h
		}(), "connected on n2 with no fault on the path from n1, but delivered 500ms after the send was invoked; bound 100ms"},
		{"a strict send delivered within the bound passes", func() *History {
			h := liveRoom(u1, u2)
			h.Faults = []Fault{{From: 200 * ms, To: 900 * ms, Kind: "crash", Nodes: []string{"n2"}}}
			h.StrictFrom = 950 * ms
			return h
		}(), ""},
		{"a send before the settle time keeps its excuses", func() *History {
			h := liveRoom(u1, late)
			h.Faults = []Fault{{From: 200 * ms, To: 900 * ms, Kind: "crash", Nodes: []string{"n2"}}}
			h.StrictFrom = 1001 * ms
			return h
		}(), ""},
		{"unchecked without a bound", func() *History {
			h := liveRoom(u1)
			h.LiveBound = 0
			return h
		}(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckTimely(tt.h)
			if tt.detail == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, PropTimely, got[0].Property)
			assert.Equal(t, "u2", got[0].User)
			assert.Equal(t, tt.detail, got[0].Detail)
		})
	}
}

func TestStrictSendsCountsTheSendsJudgedAfterTheSettleTime(t *testing.T) {
	h := liveRoom()
	assert.Equal(t, 0, StrictSends(h))
	h.StrictFrom = time.Second
	assert.Equal(t, 1, StrictSends(h))
	h.StrictFrom = 1001 * ms
	assert.Equal(t, 0, StrictSends(h))
}

func TestCheckNoPanics(t *testing.T) {
	h := &History{Events: []Event{{Kind: KindPanic, Node: "n2", Time: time.Second, Err: "deliver r1#3 u2: assignment to entry in nil map", TraceLine: 40}}}
	got := CheckNoPanics(h)
	require.Len(t, got, 1)
	assert.Equal(t, "no-task-panics: node n2: at t=1s a task panicked: deliver r1#3 u2: assignment to entry in nil map (trace line 40)", got[0].String())
}

func TestDeliveryCounts(t *testing.T) {
	live, log := DeliveryCounts(liveRoom(dlv(1, "u1", "r1", 1, "a"), Event{Kind: KindDeliver, FromLog: true}))
	assert.Equal(t, 1, live)
	assert.Equal(t, 1, log)
}

// TestCheckTimelyItemsQueuedAhead: a message relayed on a stream waits at
// the receiver for the items written on its link before it; the bound
// grows by their hops (itemHops + itemHopsPerRecip per recipient, at
// ItemHop each), and by nothing else.
func TestCheckTimelyItemsQueuedAhead(t *testing.T) {
	u1 := at(dlv(0, "u1", "r1", 1, "a"), 1003)
	item := func(msAt int, from, to, room string, seq uint64) LinkItem {
		return LinkItem{Time: time.Duration(msAt) * ms, From: from, To: to, Room: room, Seq: seq, Recipients: 1}
	}
	ahead := []LinkItem{item(990, "n1", "n2", "r9", 1), item(995, "n1", "n2", "r9", 2), item(1001, "n1", "n2", "r1", 1)}
	with := func(deliveredMs int, items ...LinkItem) *History {
		h := liveRoom(u1, at(dlv(0, "u2", "r1", 1, "a"), deliveredMs))
		h.ItemHop = 5 * ms
		h.LinkItems = items
		return h
	}
	late := "connected on n2 with no fault on the path from n1, but delivered 160ms after the send was invoked; bound 100ms"
	tests := []struct {
		name   string
		h      *History
		detail string
	}{
		{"two items ahead, 6 hops of 5ms each", with(1160, ahead...), ""},
		{"later than those", with(1161, ahead...),
			"connected on n2 with no fault on the path from n1, but delivered 161ms after the send was invoked; bound 100ms (plus 60ms for the items queued ahead of it on the link)"},
		{"no item ahead", with(1160, ahead[2]), late},
		{"items written after it do not count", with(1160, ahead[2], item(1002, "n1", "n2", "r9", 1), item(1003, "n1", "n2", "r9", 2)), late},
		{"items on another link do not count", with(1160, item(990, "n1", "n3", "r9", 1), item(995, "n3", "n2", "r9", 2), ahead[2]), late},
		{"items written a bound before the send do not count", with(1160, item(850, "n1", "n2", "r9", 1), item(899, "n1", "n2", "r9", 2), ahead[2]), late},
		{"a message relayed on no stream item gets nothing", with(1160, ahead[:2]...), late},
		{"no ItemHop, no allowance", func() *History { h := with(1160, ahead...); h.ItemHop = 0; return h }(), late},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs := CheckTimely(tc.h)
			if tc.detail == "" {
				assert.Empty(t, vs)
				return
			}
			require.Len(t, vs, 1)
			assert.Equal(t, tc.detail, vs[0].Detail)
		})
	}
}

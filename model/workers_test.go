package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckWorkersSamples(t *testing.T) {
	ok := Sample{Node: "n1", Core: 30, Max: 200, Running: 120, PeakRunning: 200, Workers: 200, Goroutines: 90, InConns: 10}
	idle := ok
	idle.Idle, idle.Workers, idle.Running, idle.PeakRunning = true, 30, 0, 0
	running := ok
	running.PeakRunning = 201
	workers := ok
	workers.Workers = 201
	idleHigh := idle
	idleHigh.Workers = 31
	goroutines := ok
	goroutines.Goroutines = 500
	unmeasured := ok
	unmeasured.Goroutines, unmeasured.Workers = -1, -1
	tests := []struct {
		name    string
		samples []Sample
		want    []Violation
	}{
		{"within bounds", []Sample{ok, idle, unmeasured}, nil},
		{"more tasks running at once than max", []Sample{running}, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"more worker goroutines than max", []Sample{workers}, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"workers above core after idle", []Sample{idleHigh}, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"goroutines over bound", []Sample{goroutines}, []Violation{{Property: PropWorkers, Node: "n1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Samples: tt.samples, GoroutineBound: func(s Sample) int { return 10*s.InConns + s.Max }}
			assertViolations(t, tt.want, CheckWorkers(h))
		})
	}
}

// seedsRoom is the seeds' room: 150 members, u1..u50 connected to n1,
// u51..u100 to n2 and u101..u150 to n3 from t=1s on; u1 sends on n1 at
// t=5s and gets seq 1.
func seedsRoom(mode string, tasks int, extra ...Event) *History {
	users := names("u", 150)
	var events []Event
	line := 1
	for i, u := range users {
		events = append(events, Event{Kind: KindConnect, User: u, Node: []string{"n1", "n2", "n3"}[i/50], OK: true, Time: time.Second, TraceLine: line})
		line++
	}
	send := snd(1000, "u1", "r1", 1, "m1")
	send.Time, send.Invoked, send.InvokedLine = 5*time.Second, 5*time.Second, 999
	events = append(append(events, send), extra...)
	ws := map[string][]Window{}
	for _, u := range users {
		ws[u] = open
	}
	h := &History{Mode: mode, Events: withWindows("r1", ws, events...), Final: Final{Logs: map[string][]LogEntry{"r1": logOf("m1")}}}
	if tasks > 0 {
		h.Tasks = []Tasks{{Node: "n1", Room: "r1", Seq: 1, Count: tasks, TraceLine: 1001}}
	}
	return h
}

func TestCheckWorkersDispatch(t *testing.T) {
	flush := Fault{From: 4 * time.Second, To: 4 * time.Second, Kind: "route-flush", Redis: true}
	tests := []workerCase{
		{"bulk: 50 local + 2 remote servers", seedsRoom("bulk", 52), ""},
		{"single: one per member", seedsRoom("single", 150), ""},
		{"bulk with a task per recipient", seedsRoom("bulk", 150),
			"bulk dispatch started 150 tasks at the executor's gates, expected 52 (50 local + 2 remote servers, 0 members unsure)"},
		{"single grouped by server", seedsRoom("single", 52),
			"single dispatch started 52 tasks at the executor's gates, expected 150 (150 members, 0 more possible)"},
		{"no task reached the executor (bare goroutines)", seedsRoom("bulk", 0),
			"bulk dispatch started 0 tasks at the executor's gates, expected 52 (50 local + 2 remote servers, 0 members unsure)"},
		{"a route flush makes remote members unsure", func() *History {
			h := seedsRoom("bulk", 50)
			h.Faults = []Fault{flush}
			h.Recovery = map[FaultKind]time.Duration{"": 10 * time.Second}
			return h
		}(), ""},
		{"one member disconnected during the send is unsure", seedsRoom("bulk", 51,
			Event{Kind: KindDisconnect, User: "u2", Node: "n1", Time: 5 * time.Second, TraceLine: 1000}), ""},
	}
	checkWorkerCases(t, tests)
}

// A restart that overlaps incarnations may begin at the very instant the
// incarnation it stops started (a restart right after another): that
// incarnation's version then dates from the overlap's own instant, and it
// may still dispatch a send invoked after its successor is up. Here n1 ran
// v1 (single), a v2 incarnation (bulk) started at 3 s, a restart to v1
// began at 3 s, the new v1 incarnation was up at 4 s and the old one
// stopped at 6 s; u1's send at 5 s was dispatched by the old one, in bulk
// mode (the soak's false alarm: the judge took the mode from just before
// the overlap's instant only, v1's, and expected 150 single-mode tasks).
func TestCheckWorkersOverlapRightAfterARestart(t *testing.T) {
	overlapped := func(tasks int) *History {
		h := seedsRoom("bulk", tasks)
		h.Versions = []Version{{Node: "n1", From: 0, Protocol: 1}, {Node: "n1", From: 3 * time.Second, Protocol: 2}, {Node: "n1", From: 4 * time.Second, Protocol: 1}}
		h.Faults = []Fault{{From: 3 * time.Second, To: 6 * time.Second, Kind: FaultOverlap, Nodes: []string{"n1"}}}
		return h
	}
	checkWorkerCases(t, []workerCase{
		// The overlap touches n1: every member is unsure in bulk mode.
		{"the stopping v2 incarnation dispatched in bulk", overlapped(52), ""},
		{"the new v1 incarnation dispatched in single", overlapped(150), ""},
		{"more than either allows", overlapped(200), "single dispatch started 200 tasks at the executor's gates, expected 0..150 (the node was upgraded during the send: 0 local + 0 remote servers, 150 members unsure in bulk mode or 150 members, 0 more possible in single mode)"},
	})
}

// workerCase is a history and the one bounded-worker-growth detail it must
// yield ("" for none).
type workerCase struct {
	name   string
	h      *History
	detail string
}

func checkWorkerCases(t *testing.T, tests []workerCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckWorkers(tt.h)
			if tt.detail == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, PropWorkers, got[0].Property)
			assert.Equal(t, tt.detail, got[0].Detail)
		})
	}
}

func TestCheckWorkersDispatchElsewhere(t *testing.T) {
	h := seedsRoom("bulk", 52)
	h.Tasks[0].Node = "n2"
	got := CheckWorkers(h)
	require.Len(t, got, 1)
	assert.Contains(t, got[0].Detail, "first-dispatch tasks ran on n2, but n1 acked the send as its own")
}

func TestCheckWorkersRetriesNotJudged(t *testing.T) {
	h := seedsRoom("bulk", 52)
	h.Tasks = append(h.Tasks, Tasks{Node: "n2", Room: "r1", Seq: 1, Retry: true, Count: 7})
	assert.Empty(t, CheckWorkers(h))
}

func TestCheckWorkersCrashExcusesMissingTasks(t *testing.T) {
	h := seedsRoom("bulk", 10)
	h.Faults = []Fault{{From: 5 * time.Second, To: 8 * time.Second, Kind: "crash", Nodes: []string{"n1"}}}
	assert.Empty(t, CheckWorkers(h))
}

// A member whose client closed its stream on the sender's node and then
// connected to another node may still have its old session on the sender
// (the node has until h.CloseBound to notice the close): the dispatch then
// finds it local. It is local or on its new node, never unrouted: it may
// add one task, it never removes its node from the destinations, and once
// the close bound has passed it is on its new node only.
func TestCheckWorkersMemberLeftSender(t *testing.T) {
	const why = "49 local + 2 remote servers, 0 members unsure, 1 member on 1 remote server maybe still local (they left this node within its close bound)"
	// u2 (of n1, the sender's node) closes its stream at `left` and is
	// connected to `to` 100ms later; the send is invoked at 5s.
	moved := func(mode string, tasks int, left time.Duration, to string, closeErr string) *History {
		h := seedsRoom(mode, tasks,
			Event{Kind: KindDisconnect, User: "u2", Node: "n1", Err: closeErr, Time: left, Invoked: left, TraceLine: 990, InvokedLine: 990},
			Event{Kind: KindConnect, User: "u2", Node: to, OK: true, Time: left + 100*time.Millisecond, TraceLine: 995})
		h.CloseBound = time.Second
		return h
	}
	const recent, long = 4800 * time.Millisecond, 3 * time.Second
	tests := []workerCase{
		// The case: n2 is a destination anyway; u2's stale session on n1
		// makes it 49 local + u2 + n2 + n3.
		{"still local: one task more", moved("bulk", 52, recent, "n2", ""), ""},
		{"still local, stream mode", moved("stream", 52, recent, "n2", ""), ""},
		{"gone: with n2's group", moved("bulk", 51, recent, "n2", ""), ""},
		// What must still fail.
		{"never two tasks for it", moved("stream", 53, recent, "n2", ""),
			"stream dispatch started 53 tasks at the executor's gates, expected 51..52 (" + why + ")"},
		{"a new destination is never skipped", moved("bulk", 51, recent, "n4", ""),
			"bulk dispatch started 51 tasks at the executor's gates, expected 52 (" + why + ")"},
		{"left before the close bound", moved("bulk", 52, long, "n2", ""),
			"bulk dispatch started 52 tasks at the executor's gates, expected 51 (49 local + 2 remote servers, 0 members unsure)"},
		{"the server ended its stream", moved("stream", 52, recent, "n2", "Unavailable"),
			"stream dispatch started 52 tasks at the executor's gates, expected 51 (49 local + 2 remote servers, 0 members unsure)"},
		{"a single-mode member is one task wherever it is", moved("single", 151, recent, "n2", ""),
			"single dispatch started 151 tasks at the executor's gates, expected 150 (150 members, 0 more possible)"},
	}
	checkWorkerCases(t, tests)
}

// TestCheckWorkersPausedNode: a sample taken while its node was paused is
// not held to the goroutine bound (calls pile up until the pause ends);
// the same sample after the pause, or on another node, is.
func TestCheckWorkersPausedNode(t *testing.T) {
	s := Sample{Node: "n1", Core: 30, Max: 200, Goroutines: 500, InConns: 10, Time: 3 * time.Second}
	bound := func(s Sample) int { return 10*s.InConns + s.Max }
	pause := Fault{Kind: FaultPause, From: 2 * time.Second, To: 4 * time.Second, Nodes: []string{"n1"}}
	h := &History{Samples: []Sample{s}, GoroutineBound: bound, Faults: []Fault{pause}}
	assert.Empty(t, CheckWorkers(h))
	later := s
	later.Time = 5 * time.Second
	other := s
	other.Node = "n2"
	h.Samples = []Sample{later, other}
	assert.Len(t, CheckWorkers(h), 2)
}

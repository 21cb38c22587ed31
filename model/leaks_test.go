package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func okSample(node string) Sample {
	return Sample{Node: node, OpenStreams: 4, Sessions: 4, OutConns: 4, LivePeers: 2, ChannelsPerPeer: 2}
}

func vanish(line int, at time.Duration, user, node string) Event {
	return Event{Kind: KindDisconnect, Time: at, User: user, Node: node, Vanish: true, TraceLine: line}
}

func closed(line int, at time.Duration, user, node string) Event {
	return Event{Kind: KindSessionClosed, Time: at, User: user, Node: node, TraceLine: line}
}

func TestCheckStreamLeaks(t *testing.T) {
	s := time.Second
	leaky := okSample("n2")
	leaky.OpenStreams = 5
	peers := okSample("n3")
	peers.OutConns = 5
	tests := []struct {
		name    string
		samples []Sample
		events  []Event
		want    []Violation
	}{
		{"balanced samples, vanish closed within bound", []Sample{okSample("n1"), okSample("n2")}, []Event{
			vanish(1, 10*s, "u1", "n1"), closed(2, 40*s, "u1", "n1"),
		}, nil},
		{"closed on the bound exactly", nil, []Event{vanish(1, 10*s, "u1", "n1"), closed(2, 40*s, "u1", "n1")}, nil},
		{"graceful disconnects are not judged", nil, []Event{{Kind: KindDisconnect, User: "u1", Node: "n1", TraceLine: 1}}, nil},
		{"stream leak sample", []Sample{okSample("n1"), leaky}, nil,
			[]Violation{{Property: PropStreamLeak, Node: "n2"}}},
		{"peer connections not live peers x channels", []Sample{peers}, nil,
			[]Violation{{Property: PropStreamLeak, Node: "n3"}}},
		{"vanish not closed within bound", nil, []Event{
			vanish(3, 10*s, "u1", "n1"), closed(8, 41*s, "u1", "n1"),
		}, []Violation{{Property: PropStreamLeak, User: "u1", Node: "n1", TraceLines: []int{3, 8}}}},
		{"vanish never closed; a close elsewhere does not count", nil, []Event{
			vanish(3, 10*s, "u1", "n1"), closed(4, 11*s, "u1", "n2"), closed(5, 12*s, "u2", "n1"),
		}, []Violation{{Property: PropStreamLeak, User: "u1", Node: "n1", TraceLines: []int{3}}}},
		{"a close before the last connect does not count", nil, []Event{
			closed(2, 5*s, "u1", "n1"),
			{Time: 6 * s, Kind: KindConnect, User: "u1", Node: "n1", OK: true},
			vanish(3, 10*s, "u1", "n1"),
		}, []Violation{{Property: PropStreamLeak, User: "u1", Node: "n1", TraceLines: []int{3}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Samples: tt.samples, Events: tt.events, KeepAliveBound: 30 * s}
			assertViolations(t, tt.want, CheckStreamLeaks(h))
		})
	}
}

func TestCheckStreamLeaksDetails(t *testing.T) {
	leaky := okSample("n2")
	leaky.Time, leaky.OpenStreams = 1500*time.Millisecond, 5
	h := &History{
		Samples:        []Sample{leaky},
		Events:         []Event{vanish(3, 10*time.Second, "u1", "n1"), closed(8, 50*time.Second, "u1", "n1")},
		KeepAliveBound: 30 * time.Second,
	}
	got := CheckStreamLeaks(h)
	require.Len(t, got, 2)
	assert.Equal(t, "no-stream-leaks: node n2: at t=1.5s: 5 open client streams but 4 connected sessions", got[0].String())
	assert.Equal(t, "no-stream-leaks: user u1 node n1: client vanished at t=10s; the node closed its stream at t=50s, 40s later (bound 30s) (trace lines 3, 8)", got[1].String())
}

func TestCheckStreamLeaksNoBound(t *testing.T) {
	h := &History{Events: []Event{vanish(1, time.Second, "u1", "n1"), closed(2, time.Hour, "u1", "n1")}}
	assert.Empty(t, CheckStreamLeaks(h), "without a bound only the close itself is required")
}

func TestCheckGoroutineLeaks(t *testing.T) {
	assert.Empty(t, CheckGoroutineLeaks(&History{}))
	got := CheckGoroutineLeaks(&History{Final: Final{LeftoverGoroutines: []string{
		"goroutine 12 [chan receive]: system.(*Session).pump", "goroutine 40 [select]: grpc.(*ClientConn).idle",
	}}})
	require.Len(t, got, 1)
	assert.Equal(t, PropGoroutineLeak, got[0].Property)
	assert.Equal(t, "no-goroutine-leaks: 2 goroutine(s) left after teardown: "+
		"goroutine 12 [chan receive]: system.(*Session).pump; goroutine 40 [select]: grpc.(*ClientConn).idle", got[0].String())
}

// A node that closed the stream before the client vanished (a crash the
// client had not noticed yet) owes nothing more.
func TestCheckStreamLeaksClosedBeforeVanish(t *testing.T) {
	h := &History{KeepAliveBound: 15 * time.Second, Events: []Event{
		{Time: 1 * time.Second, Kind: KindConnect, User: "u2", Node: "n3", OK: true, TraceLine: 1},
		{Time: 4 * time.Second, Kind: KindSessionClosed, User: "u2", Node: "n3", TraceLine: 2},
		{Time: 5 * time.Second, Kind: KindDisconnect, Vanish: true, User: "u2", Node: "n3", TraceLine: 3},
	}}
	assert.Empty(t, CheckStreamLeaks(h))
	// After a new connect to the same node, the old close does not count.
	h.Events = append(h.Events[:2],
		Event{Time: 6 * time.Second, Kind: KindConnect, User: "u2", Node: "n3", OK: true, TraceLine: 4},
		Event{Time: 7 * time.Second, Kind: KindDisconnect, Vanish: true, User: "u2", Node: "n3", TraceLine: 5})
	vs := CheckStreamLeaks(h)
	require.Len(t, vs, 1)
	assert.Equal(t, []int{5}, vs[0].TraceLines)
}

// A client that closes its stream itself must see the node end it at once,
// not at the next delivery or keep-alive.
func TestCheckStreamLeaksCleanClose(t *testing.T) {
	s := time.Second
	bye := func(line int, at time.Duration) Event {
		return Event{Kind: KindDisconnect, Time: at, User: "u1", Node: "n1", TraceLine: line}
	}
	tests := []struct {
		name   string
		events []Event
		bound  time.Duration
		want   []Violation
	}{
		{"closed promptly", []Event{bye(1, 10*s), closed(2, 10*s+300*time.Millisecond, "u1", "n1")}, s, nil},
		{"closed only at the next delivery", []Event{bye(1, 10*s), closed(2, 14*s, "u1", "n1")}, s,
			[]Violation{{Property: PropStreamLeak, User: "u1", Node: "n1", TraceLines: []int{1, 2}}}},
		{"never closed", []Event{bye(1, 10*s)}, s,
			[]Violation{{Property: PropStreamLeak, User: "u1", Node: "n1", TraceLines: []int{1}}}},
		{"unchecked without a bound", []Event{bye(1, 10*s)}, 0, nil},
		{"a paused node's deadline moves by the pause", []Event{bye(1, 10*s), closed(2, 12*s+500*time.Millisecond, "u1", "n1")}, s, nil},
		{"a stream the server ended is not judged", []Event{{Kind: KindDisconnect, Time: 10 * s, User: "u1", Node: "n1", Err: "Unavailable", TraceLine: 1}}, s, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pause := []Fault{{Kind: "pause", Nodes: []string{"n1"}, From: 9 * s, To: 12 * s}}
			if tt.name != "a paused node's deadline moves by the pause" {
				pause = nil
			}
			assertViolations(t, tt.want, CheckStreamLeaks(&History{Events: tt.events, CloseBound: tt.bound, Faults: pause}))
		})
	}
}

// TestPausedForChains: a pause that starts inside the time an earlier one
// added to a deadline moves it again (a node paused twice in a row).
func TestPausedForChains(t *testing.T) {
	p := func(from, to time.Duration) Fault {
		return Fault{From: from, To: to, Kind: FaultPause, Nodes: []string{"n2"}}
	}
	h := &History{Faults: []Fault{p(5*time.Second, 8*time.Second), p(8*time.Second, 11*time.Second), p(20*time.Second, 21*time.Second)}}
	assert.Equal(t, 6*time.Second, pausedFor(h, "n2", 5*time.Second, 6*time.Second))
	assert.Equal(t, time.Duration(0), pausedFor(h, "n1", 5*time.Second, 6*time.Second))
}

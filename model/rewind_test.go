package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRewindExcusesALostReplysMessage: a send in flight across a rewind
// whose reply was lost wrote its message (seq 3) before the restore, which
// dropped it from the log; the relay delivered it after the restore. Its
// seq is rewound: no-stray-delivery does not count it. Without the
// rewind, the same delivery is stray.
func TestRewindExcusesALostReplysMessage(t *testing.T) {
	s := time.Second
	send := snd(10, "u1", "r", 0, "m3")
	send.OK, send.Err, send.Invoked, send.Time = false, "DeadlineExceeded", 4*s, 7*s
	d := dlv(20, "u2", "r", 3, "m3")
	d.Time = 6 * s
	events := withWindows("r", map[string][]Window{"u1": {{From: 1}}, "u2": {{From: 1}}},
		snd(1, "u1", "r", 1, "m1"), snd(2, "u1", "r", 2, "m2"), send, d)
	h := &History{Events: events, Final: Final{Logs: map[string][]LogEntry{"r": logOf("m1", "m2")}}}
	assert.NotEmpty(t, CheckNoStray(h), "without a rewind the delivery of seq 3 is stray")
	h.Faults = []Fault{{Kind: FaultRedisRewind, From: 5 * s, To: 5500 * time.Millisecond, Nodes: []string{"n1"}, Redis: true}}
	for _, v := range Check(h) {
		assert.NotEqual(t, PropNoStray, v.Property, "%v", v)
	}
}

// TestRewindExcusesARetriedSendsLostSeq: the send's first try wrote seq 3
// before the restore and lost its reply; its retry after the restore was
// acked at seq 2 (the restored log had only seq 1). The delivery of the
// lost seq 3 is not stray.
func TestRewindExcusesARetriedSendsLostSeq(t *testing.T) {
	s := time.Second
	send := snd(10, "u1", "r", 2, "m3")
	send.Invoked, send.Time = 4*s, 7*s
	d := dlv(20, "u2", "r", 3, "m3")
	d.Time = 6 * s
	events := withWindows("r", map[string][]Window{"u1": {{From: 1}}, "u2": {{From: 1}}},
		snd(1, "u1", "r", 1, "m1"), send, d)
	h := &History{Events: events, Final: Final{Logs: map[string][]LogEntry{"r": logOf("m1", "m3")}}}
	h.Faults = []Fault{{Kind: FaultRedisRewind, From: 5 * s, To: 5500 * time.Millisecond, Nodes: []string{"n1"}, Redis: true}}
	for _, v := range Check(h) {
		assert.NotEqual(t, PropNoStray, v.Property, "%v", v)
	}
}

// TestRewindExcusesAnUnseenSequencing: a dispatch during the rewind
// started tasks at seq 2, which no ack or delivery names (the reply was
// lost, the relays failed); after the restore another message got seq 2
// and dispatched again. Seq 2 is rewound: the two dispatches' tasks are
// not added up against one message.
func TestRewindExcusesAnUnseenSequencing(t *testing.T) {
	s := time.Second
	x := rewindsOf(&History{
		Faults: []Fault{{Kind: FaultRedisRewind, From: 5 * s, To: 6 * s, Redis: true}},
		Tasks:  []Tasks{{Node: "n1", Room: "r", Seq: 2, Count: 2, First: 5500 * time.Millisecond}, {Node: "n1", Room: "r", Seq: 2, Count: 2, First: 7 * s}},
	})
	assert.True(t, x.rewound("r", 2))
	assert.False(t, x.rewound("r", 3))
}

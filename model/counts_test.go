package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// CountsOf counts acked ordinary sends (not a failed send, not a steal)
// and the deliveries live and from the log; users and faults are the
// caller's.
func TestCountsOf(t *testing.T) {
	h := compact(&History{Events: []Event{
		snd(1, "u1", "r1", 1, "u1-m1"),
		{Kind: KindSend, User: "u1", Room: "r1", MsgID: "u1-m2", Err: "Unavailable", TraceLine: 2},
		{Kind: KindSend, User: "u2", Room: "r1", MsgID: "u1-m1", OK: true, Seq: 1, Duplicate: true, Steal: true, TraceLine: 3},
		dlv(4, "u2", "r1", 1, "u1-m1"),
		{Kind: KindDeliver, User: "u1", Room: "r1", Seq: 1, MsgID: "u1-m1", FromLog: true, TraceLine: 5},
	}})
	assert.Equal(t, Counts{Users: 2, Acked: 1, Deliveries: 2, Live: 1, FromLog: 1, Faults: 7}, CountsOf(h, 2, 7))
	assert.Equal(t, Counts{Users: 3}, CountsOf(nil, 3, 0), "no history: nothing happened")
}

package sim

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

// A client's inbox holds the whole run's actions from its start. Taking
// them must keep their order and must not keep the taken ones in memory:
// the array behind the inbox shrinks as the run goes on.
func TestClientInboxReleasesTaken(t *testing.T) {
	cl := &Client{}
	const n = 1000
	for i := range n {
		cl.inbox = append(cl.inbox, Action{At: time.Duration(i), MsgID: fmt.Sprintf("m%d", i)})
	}
	first := weak.Make(&cl.inbox[0])
	for i := range n {
		if i == n/2+1 {
			runtime.GC()
			assert.Nil(t, first.Value(), "the array that held the taken actions is collected")
		}
		a := cl.pop()
		require.Equal(t, fmt.Sprintf("m%d", i), a.MsgID, "order")
		left := n - i - 1
		// What the array can still hold: the untaken actions, and at
		// most as many taken ones (cleared) before it is copied.
		assert.LessOrEqual(t, cap(cl.inbox), 2*left+1, "after %d taken", i+1)
	}
	assert.Nil(t, cl.inbox, "an empty inbox lets its array go")
}

// An action queued into the middle of the inbox (doNow's insert) between
// pops keeps the inbox in time order.
func TestClientInboxInsertBetweenPops(t *testing.T) {
	cl := &Client{user: "u", wake: make(chan struct{}, 1)}
	c := &Cluster{users: map[string]*Client{"u": cl}}
	for i := range 10 {
		cl.inbox = append(cl.inbox, Action{User: "u", At: time.Duration(10 * i)})
	}
	var got []time.Duration
	for i := range 10 {
		got = append(got, cl.pop().At)
		if i == 3 {
			c.doNow(Action{User: "u", At: 55})
		}
	}
	got = append(got, cl.pop().At)
	assert.Equal(t, []time.Duration{0, 10, 20, 30, 40, 50, 55, 60, 70, 80, 90}, got)
}

// The oracle's record of a message's tasks must not keep the strings it
// was given alive (a room name cut from a larger string would hold all of
// it for the run), and it still counts repeats of the same message, node
// and dispatch.
func TestTaskRecordsKeepNoLabel(t *testing.T) {
	trace := NewTrace(false, 0)
	r := newRecorder(trace, nil, "bulk")
	var tc taskCounter
	big := strings.Repeat("x", 64) + " r1"
	data := weak.Make(unsafe.StringData(big))
	r.taskStarted(&tc, "n1", system.Message{Room: big[65:], Seq: 5}, false, 0)
	r.taskStarted(&tc, "n1", system.Message{Room: "r1", Seq: 5}, false, 0)
	r.taskStarted(&tc, "n1", system.Message{Room: "r1", Seq: 5, Retry: true}, false, 0)
	r.taskStarted(&tc, "n1", system.Message{Room: "r1", Seq: 6}, false, 0)
	r.taskStarted(&tc, "n1", system.Message{}, false, 0) // a task of no message: not recorded
	big = ""
	runtime.GC()
	assert.Nil(t, data.Value(), "the string the room was cut from is collected")
	h := r.history()
	require.Len(t, h.Tasks, 3)
	assert.Equal(t, []int{2, 1, 1}, []int{h.Tasks[0].Count, h.Tasks[1].Count, h.Tasks[2].Count})
	assert.Equal(t, []bool{false, true, false}, []bool{h.Tasks[0].Retry, h.Tasks[1].Retry, h.Tasks[2].Retry})
	assert.Equal(t, "r1", h.Tasks[0].Room)
	assert.Equal(t, uint64(6), h.Tasks[2].Seq)
}

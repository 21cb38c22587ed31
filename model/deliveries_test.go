package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compact moves h's deliveries from Events into a DeliveryLog, as the
// simulator records them.
func compact(h *History) *History {
	c := *h
	c.Events = nil
	c.Deliveries = &DeliveryLog{}
	for _, ev := range h.Events {
		if ev.Kind == KindDeliver {
			c.Deliveries.Add(ev)
		} else {
			c.Events = append(c.Events, ev)
		}
	}
	return &c
}

// The log gives back exactly the deliveries it was given, in order, held
// in memory or spilled to its file in chunks of any size; a snapshot taken
// half way sees the first half, however the original goes on.
func TestDeliveryLogRoundTrip(t *testing.T) {
	for _, spillAt := range []int{0, -1, 1, 7, 64, 1000} {
		t.Run(fmt.Sprintf("spill-at-%d", spillAt), func(t *testing.T) {
			l := DeliveryLog{SpillAt: spillAt}
			var want []Event
			var half *DeliveryLog
			r := rand.New(rand.NewPCG(3, 4))
			at, line := time.Duration(0), 0
			for i := range 2000 {
				at += time.Duration(r.IntN(3)) * time.Millisecond / time.Duration(1+r.IntN(7))
				line += 1 + r.IntN(5)
				ev := Event{Time: at, Kind: KindDeliver, User: fmt.Sprintf("u%d", r.IntN(7)), Room: fmt.Sprintf("r%d", r.IntN(3)),
					Node: fmt.Sprintf("n%d", r.IntN(3)), Seq: uint64(r.IntN(300)), FromLog: r.IntN(4) == 0, TraceLine: line}
				ev.MsgID = fmt.Sprintf("m%d", ev.Seq+uint64(i%5/4)) // now and then not the seq's usual id
				l.Add(ev)
				want = append(want, ev)
				if i == 999 {
					half = l.Snapshot()
				}
			}
			var got, gotHalf []Event
			l.Snapshot().Each(func(ev Event) { got = append(got, ev) })
			half.Each(func(ev Event) { gotHalf = append(gotHalf, ev) })
			assert.Equal(t, want, got)
			assert.Equal(t, want[:1000], gotHalf)
			assert.Equal(t, len(want), l.Len())
			if spillAt > 0 {
				assert.Greater(t, l.Spilled(), int64(0), "the records must have gone to the file")
				assert.Less(t, len(l.buf), spillAt+64, "memory holds at most one chunk")
			} else {
				assert.Zero(t, l.Spilled())
			}
		})
	}
}

// Every checker gives the same verdict, byte for byte, whether the
// deliveries are Events or a DeliveryLog, on histories full of strays,
// duplicates, gaps, reorderings and late or missing deliveries.
func TestCheckersSameVerdictOnCompactDeliveries(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	violations := 0
	for round := range 300 {
		h := randomHistory(r)
		want := Check(h)
		violations += len(want)
		c := compact(h)
		require.Equal(t, want, Check(c), "round %d", round)
		require.Equal(t, CheckPrefix(h), CheckPrefix(c), "round %d", round)
		spilled := compact(h)
		spilled.Deliveries = &DeliveryLog{SpillAt: 16}
		spilled.EachDelivery(func(Event) { t.Fatal("no deliveries yet") })
		h.EachDelivery(spilled.Deliveries.Add)
		require.Equal(t, want, Check(spilled), "round %d (spilled)", round)
		l1, f1 := DeliveryCounts(h)
		l2, f2 := DeliveryCounts(c)
		require.Equal(t, []int{l1, f1}, []int{l2, f2})
	}
	assert.Greater(t, violations, 300, "the histories must violate the delivery properties often")
}

// randomHistory is a run of two rooms and four users over two nodes:
// joins and leaves, sends (some late, some retried), and deliveries that
// mostly follow the log but now and then skip, repeat, reorder, come late,
// carry a wrong message id, or fall outside a window.
func randomHistory(r *rand.Rand) *History {
	h := &History{Mode: []string{"single", "bulk"}[r.IntN(2)], LiveBound: 50 * time.Millisecond,
		Final: Final{Logs: map[string][]LogEntry{}}}
	line := 0
	at := time.Duration(0)
	next := func() (time.Duration, int) {
		line++
		at += time.Duration(r.IntN(20)) * time.Millisecond
		return at, line
	}
	users, rooms := []string{"u1", "u2", "u3", "u4"}, []string{"r1", "r2"}
	for _, room := range rooms {
		n := 5 + r.IntN(20)
		h.Final.Logs[room] = logOf(msgs(n)...)
		for _, u := range users {
			if r.IntN(4) == 0 {
				continue
			}
			tm, l := next()
			h.Events = append(h.Events, Event{Time: tm, Kind: KindConnect, User: u, Node: "n1", OK: true, TraceLine: l, Invoked: tm, InvokedLine: l})
			tm, l = next()
			h.Events = append(h.Events, Event{Time: tm, Kind: KindJoin, User: u, Room: room, Node: "n1", Seq: uint64(1 + r.IntN(3)), OK: true, TraceLine: l, Invoked: tm, InvokedLine: l})
		}
		for seq := 1; seq <= n; seq++ {
			tm, l := next()
			inv := tm - time.Duration(r.IntN(3))*time.Millisecond
			send := Event{Time: tm, Kind: KindSend, User: users[r.IntN(4)], Room: room, Node: "n1", Seq: uint64(seq),
				MsgID: fmt.Sprintf("m%d", seq), OK: true, Tries: 1 + r.IntN(10)/9, TraceLine: l, Invoked: inv, InvokedLine: l - 1}
			h.Events = append(h.Events, send)
			for _, u := range users {
				if r.IntN(12) == 0 {
					continue // lost
				}
				for k := range 1 + r.IntN(20)/19 { // now and then twice
					tm, l := next()
					s := uint64(seq)
					switch r.IntN(30) {
					case 0:
						s += 2
					case 1:
						s--
					}
					id := fmt.Sprintf("m%d", s)
					if r.IntN(40) == 0 {
						id = "bogus"
					}
					if r.IntN(15) == 0 {
						tm += 200 * time.Millisecond // late
					}
					h.Events = append(h.Events, Event{Time: tm, Kind: KindDeliver, User: u, Room: room, Node: "n1", Seq: s, MsgID: id,
						FromLog: k > 0 || r.IntN(5) == 0, TraceLine: l})
				}
			}
		}
		if r.IntN(2) == 0 {
			tm, l := next()
			h.Events = append(h.Events, Event{Time: tm, Kind: KindLeave, User: users[r.IntN(4)], Room: room, Node: "n1", Seq: uint64(n / 2), OK: true, TraceLine: l, Invoked: tm, InvokedLine: l})
		}
	}
	return h
}

package model

import (
	"fmt"
	"time"
)

// A heterogeneous cluster (a config rollout) may have a receiver whose
// limits are smaller than its sender's: a message the sender sequenced,
// with a payload longer than the receiver's MaxPayload, or relayed in one
// call (a bulk call, a stream item) naming more recipients than the
// receiver's MaxRecipients, is refused by the receiver (InvalidArgument,
// not retried). Its recipients on that node are owed it through the
// catch-up only (no-loss and exactly-once still hold); the refusal costs
// that message on that path alone: every other message on the same link
// or channel stays owed in time (CheckTimely).

// refused says whether the relay of send to node may have been refused by
// node's limits: an incarnation of node that may have received it (one
// running at some point of [send.Invoked, until]) has a MaxPayload below
// the send's payload size, or a MaxRecipients below the most recipients
// the sender may have named in one call to node. In single mode a call
// names one recipient; in bulk and stream mode every user of the room
// with a route to node, at most the room's users that tried to connect
// to node before until (a route outlives its stream).
func (j *judge) refused(send Event, node string, until time.Duration) bool {
	if len(j.h.Limits) == 0 {
		return false
	}
	recipients := -1 // counted on demand
	for i, x := range j.h.Limits {
		if x.Node != node || x.From > until {
			continue
		}
		if next, ok := j.nextLimits(i); ok && next <= send.Invoked {
			continue // replaced before the send
		}
		if send.Size > x.MaxPayload {
			return true
		}
		if recipients < 0 {
			recipients = j.mostRecipients(send, node, until)
		}
		if recipients > x.MaxRecipients {
			return true
		}
	}
	return false
}

// nextLimits is when the incarnation after h.Limits[i]'s started.
func (j *judge) nextLimits(i int) (time.Duration, bool) {
	for _, x := range j.h.Limits[i+1:] {
		if x.Node == j.h.Limits[i].Node {
			return x.From, true
		}
	}
	return 0, false
}

// mostRecipients bounds how many recipients one relay call of send to
// node named (see refused).
func (j *judge) mostRecipients(send Event, node string, until time.Duration) int {
	if j.h.ModeAt(send.Node, send.Invoked) == "single" {
		return 1
	}
	if j.h.Recipients != nil {
		// Counted on the wire: no call or item carried it to node with
		// more (none at all: it was never relayed there, so never
		// refused there either).
		return j.h.Recipients[fmt.Sprintf("%s#%d>%s", send.Room, send.Seq, node)]
	}
	if j.connectsTo == nil {
		j.connectsTo = map[string]map[string]time.Duration{}
		for _, ev := range j.h.Events {
			if ev.Kind != KindConnect {
				continue
			}
			m := j.connectsTo[ev.Node]
			if m == nil {
				m = map[string]time.Duration{}
				j.connectsTo[ev.Node] = m
			}
			if _, seen := m[ev.User]; !seen {
				m[ev.User] = ev.inv().t
			}
		}
	}
	n := 0
	for _, u := range j.roomUsers(send.Room) {
		if at, ok := j.connectsTo[node][u]; ok && at <= until {
			n++
		}
	}
	return n
}

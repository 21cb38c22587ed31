// A stalled client (the stall fault kind, sim/plan/fault_stall.go): its
// app hangs with its connection up, so it answers keep-alives but reads
// nothing, and the node's writes fill the HTTP/2 window and then the
// client's outbox.

package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
)

// Stall burst: what a stall with a lag sends to one of the stalled user's
// rooms while it is offline, so that its replay outgrows its outbox (64
// in the default world) and the HTTP/2 window (64 KiB each way): 120
// messages of 3,500 bytes (within the default MaxPayload) are 420 KB.
const (
	stallBurst     = 120
	stallBurstSize = 3500
	// stallTail live messages follow in the room, one every stallTailGap
	// from the bystander once it is back, while the stalled client's
	// replay waits for it: a busy room, whose every delivery to the
	// stalled user must leave at once rather than park a worker or a
	// relay handler behind that replay (isolation).
	stallTail    = 40
	stallTailGap = 25 * time.Millisecond
	// stallApart messages, one every stallApartGap, pass between two
	// users of a room of their own through the stall: users who share no
	// room with the stalled client, whose live delivery it must not cost
	// (isolation).
	stallApart    = 30
	stallApartGap = 100 * time.Millisecond
)

// Stall has user's client stop reading for dur (0: until the liveness
// phase); with lag > 0 it first goes offline for lag while it sends a
// burst of large messages to one of its rooms, and comes back stalled.
func (p panel) Stall(user string, lag, dur time.Duration) { p.c.stall(user, lag, dur) }

func (c *Cluster) stall(user string, lag, dur time.Duration) {
	now := c.Now()
	until := time.Duration(-1)
	if dur > 0 {
		until = now + lag + dur
	}
	c.doNow(Action{At: now, User: user, Kind: ActStall, For: until})
	if lag <= 0 {
		return
	}
	var rooms []string
	for room, us := range c.rec.members() {
		for _, u := range us {
			if u == user {
				rooms = append(rooms, room)
			}
		}
	}
	sort.Strings(rooms)
	c.doNow(Action{At: now, User: user, Kind: ActDisconnect})
	if len(rooms) > 0 {
		c.stallBursts++
		room := rooms[c.stallBursts%len(rooms)]
		// A bystander, another member of the room, is offline through
		// the burst too and comes back reading at its pace: its replay is
		// as long, and must not cost it its session.
		var others []string
		for _, u := range c.rec.members()[room] {
			if u != user {
				others = append(others, u)
			}
		}
		if len(others) > 0 {
			by := others[c.stallBursts%len(others)]
			c.doNow(Action{At: now, User: by, Kind: ActDisconnect})
			c.doNow(Action{At: now + lag, User: by, Kind: ActConnect, Node: (c.stallBursts + 1) % len(c.nodes)})
			for i := range stallTail {
				c.doNow(Action{At: now + lag + 200*time.Millisecond + time.Duration(i)*stallTailGap, User: by, Kind: ActSend, Room: room,
					MsgID: fmt.Sprintf("%s-tail%d-%d", by, c.stallBursts, i)})
			}
		}
		c.apartPair(now, lag)
		for i := range stallBurst {
			c.doNow(Action{At: now, User: user, Kind: ActSend, Room: room, Size: stallBurstSize, Node: i % len(c.nodes),
				MsgID: fmt.Sprintf("%s-st%d-%d", user, c.stallBursts, i)})
		}
	}
	c.doNow(Action{At: now + lag, User: user, Kind: ActConnect, Node: c.stallBursts % len(c.nodes)})
}

// apartPair has two new users, in a room of their own, exchange messages
// while a stalled client's replay waits for it (from lag after now): they
// share no room with it. The sender is on the node the bystander sends
// its tail from, the receiver on the stalled client's: their relays meet
// the same pool and the same peer as the stalled client's deliveries.
func (c *Cluster) apartPair(now, lag time.Duration) {
	n := c.stallBursts
	room := fmt.Sprintf("apart%d", n)
	a, b := fmt.Sprintf("apart%da", n), fmt.Sprintf("apart%db", n)
	c.doNow(Action{At: now, User: a, Kind: ActCreate, Room: room})
	c.doNow(Action{At: now, User: a, Kind: ActJoin, Room: room})
	c.doNow(Action{At: now, User: a, Kind: ActConnect, Node: (n + 1) % len(c.nodes)})
	c.doNow(Action{At: now + lag/2, User: b, Kind: ActJoin, Room: room})
	c.doNow(Action{At: now + lag/2, User: b, Kind: ActConnect, Node: n % len(c.nodes)})
	for i := range stallApart {
		c.doNow(Action{At: now + lag + time.Duration(i)*stallApartGap, User: a, Kind: ActSend, Room: room,
			MsgID: fmt.Sprintf("%s-%d", a, i)})
	}
}

// setStall is the client's side of ActStall: it reads nothing until
// until (-1: until unstall, at the liveness phase).
func (cl *Client) setStall(until time.Duration) {
	cl.mu.Lock()
	cl.stallUntil = until
	cl.stalled = true
	cl.mu.Unlock()
	c := cl.c
	c.Trace.Event(c.Now(), cl.user, "stall until %s", stallEnd(until))
}

func stallEnd(until time.Duration) string {
	if until < 0 {
		return "the heal"
	}
	return until.String()
}

// unstall ends the client's stall (the liveness phase).
func (cl *Client) unstall() {
	cl.mu.Lock()
	was := cl.stalled
	cl.stalled = false
	if was {
		close(cl.stallWake)
		cl.stallWake = make(chan struct{})
	}
	cl.mu.Unlock()
}

// waitStall holds the receiver of cs while the client is stalled, until
// the stall ends or the stream is closed.
func (cl *Client) waitStall(cs *clientStream) {
	for {
		cl.mu.Lock()
		stalled, until, wake := cl.stalled, cl.stallUntil, cl.stallWake
		if stalled && until >= 0 && until <= cl.c.Now() {
			cl.stalled, stalled = false, false
		}
		cl.mu.Unlock()
		if !stalled {
			return
		}
		var timer <-chan time.Time
		if until >= 0 {
			t := time.NewTimer(until - cl.c.Now())
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-timer:
		case <-wake:
		case <-cs.ctx.Done():
			return
		}
	}
}

// endStalls ends every client's stall and its record (the liveness phase).
func (c *Cluster) endStalls() {
	for _, cl := range c.userList() {
		cl.unstall()
	}
	c.rec.endUserFault(model.FaultStall, c.Now())
}

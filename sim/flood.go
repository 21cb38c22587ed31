package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/sim/plan"
)

// floodState is what the floods share: the sends they numbered, and the
// end of the fault phase (0: unknown), before which a flood is over.
type floodState struct {
	sends int
	end   time.Duration
}

// floodReplay is how long before its record ends (and before the fault
// phase ends) a flooded user connects again: the time its replay of the
// backlog may take, during which its own live deliveries wait behind it.
const floodReplay = 3 * time.Second

// floodGap is the shortest gap between two sends of a flood (10 a second).
const floodGap = 100 * time.Millisecond

// flood gives f.User a long history (plan's flood): it disconnects now,
// the other members of one of its rooms send FloodMin to FloodMax
// messages to that room, evenly until it connects again on f.Node,
// floodReplay before the flood's record ends (f.For). The sends are
// handed to their senders one at a time, at their moment, by a goroutine
// of the flood's that passes a chaos gate before each (as StartChaos
// does), so a sender's other actions, and the faults that act through
// its client (slow, vanish), are not queued behind the whole flood; it
// stops with the fault phase. The draws come from the flood's own
// sub-seed, keyed by its time.
func (c *Cluster) flood(f Fault) {
	members := c.rec.members()
	var rooms []string
	for room, us := range members {
		if len(us) > 1 && slices.Contains(us, f.User) {
			rooms = append(rooms, room)
		}
	}
	now := c.Now()
	back := now + f.For - floodReplay
	if c.floods.end > 0 {
		back = min(back, c.floods.end-floodReplay)
	}
	if len(rooms) == 0 || back-now < time.Second {
		return
	}
	sort.Strings(rooms)
	r := c.seeds.faults.Derive(string(model.FaultFlood)).Derive(now.String()).Rand()
	room := rooms[r.IntN(len(rooms))]
	var senders []string
	for _, u := range members[room] {
		if u != f.User {
			senders = append(senders, u)
		}
	}
	n := plan.FloodMin + r.IntN(plan.FloodMax-plan.FloodMin+1)
	// At most one send per floodGap: a steady room, not a burst that
	// fills the stream links' backlogs (a drawn StreamBacklog may be 24)
	// and has their relays dropped to the catch-up.
	n = min(n, int((back-now)/floodGap))
	sends := make([]Action, n)
	gap := (back - now) / time.Duration(n+1)
	for i := range sends {
		u := senders[r.IntN(len(senders))]
		c.floods.sends++
		sends[i] = Action{At: now + gap*time.Duration(i+1), User: u, Kind: ActSend, Room: room, Node: r.IntN(len(c.nodes)),
			MsgID: fmt.Sprintf("%s-flood%d", u, c.floods.sends)}
	}
	c.doNow(Action{At: now, User: f.User, Kind: ActDisconnect})
	c.doNow(Action{At: back, User: f.User, Kind: ActConnect, Node: f.Node})
	stop := c.chaosStop()
	go func() {
		for i, a := range sends {
			t := time.NewTimer(a.At - c.Now())
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
			if !c.faults.on {
				return
			}
			c.Sched.Gate(dst.GateSpec{Node: "chaos", Kind: KindChaos, ID: fmt.Sprintf("flood %s #%d", a.User, i+1)})
			if !c.faults.on {
				return
			}
			c.doNow(a)
		}
	}()
}

package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/plan"
)

// flood gives f.User a long history (plan's flood): it disconnects now,
// the other members of one of its rooms send FloodMin to FloodMax
// messages to that room, evenly over f.For, and it connects again on
// f.Node at the end, replaying them. The draws come from the flood's own
// sub-seed, keyed by its time.
func (c *Cluster) flood(f Fault) {
	members := c.rec.members()
	var rooms []string
	for room, us := range members {
		if len(us) > 1 && slices.Contains(us, f.User) {
			rooms = append(rooms, room)
		}
	}
	if len(rooms) == 0 {
		return
	}
	sort.Strings(rooms)
	r := c.seeds.faults.Derive(string(model.FaultFlood)).Derive(c.Now().String()).Rand()
	room := rooms[r.IntN(len(rooms))]
	var senders []string
	for _, u := range members[room] {
		if u != f.User {
			senders = append(senders, u)
		}
	}
	n := plan.FloodMin + r.IntN(plan.FloodMax-plan.FloodMin+1)
	now, gap := c.Now(), f.For/time.Duration(n+1)
	c.doNow(Action{At: now, User: f.User, Kind: ActDisconnect})
	for i := range n {
		u := senders[r.IntN(len(senders))]
		c.floodSends++
		c.doNow(Action{At: now + gap*time.Duration(i+1), User: u, Kind: ActSend, Room: room, Node: r.IntN(len(c.nodes)),
			MsgID: fmt.Sprintf("%s-flood%d", u, c.floodSends)})
	}
	c.doNow(Action{At: now + f.For, User: f.User, Kind: ActConnect, Node: f.Node})
}

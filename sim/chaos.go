package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/sim/plan"
)

// StartChaos injects the planned faults from their own goroutine (a
// restart passes gates, and the driver must keep scheduling meanwhile).
// The returned channel closes when all are injected.
func (c *Cluster) StartChaos(plan []Fault) <-chan struct{} {
	done := make(chan struct{})
	stop := c.chaosStop()
	go func() {
		defer close(done)
		for i, f := range plan {
			if d := f.At - c.Now(); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-stop:
					t.Stop()
					return
				}
			}
			if !c.faults.on {
				return
			}
			c.Sched.Gate(dst.GateSpec{Node: "chaos", Kind: KindChaos, ID: fmt.Sprintf("f%d %s", i+1, f.Kind)})
			c.Inject(f)
		}
	}()
	return done
}

func (c *Cluster) chaosStop() <-chan struct{} {
	if c.stopChaos == nil {
		c.stopChaos = make(chan struct{})
	}
	return c.stopChaos
}

// Inject applies one fault now: counted, traced and recorded by the
// injector (inject.go), then done.
func (c *Cluster) Inject(f Fault) {
	c.inject(injection{node: "chaos", what: f.String(), record: c.timedRecord(f)})
	if k, ok := plan.Lookup(f.Kind); ok {
		k.Apply(panel{c}, f)
	}
}

// blipBurst makes a blip meet traffic, as a blip in production meets
// the traffic of the moment: a few members of one room send through each
// end of the blipped link at once, so the links between them have items
// queued while the blip lasts. The draws come from the blip's own
// sub-seed, keyed by its time.
func (c *Cluster) blipBurst(f Fault) {
	members, rooms := c.sharedRooms()
	if len(rooms) == 0 {
		return
	}
	r := c.seeds.faults.Derive("blip-burst").Derive(c.Now().String()).Rand()
	room := rooms[r.IntN(len(rooms))]
	for _, node := range []int{f.Node, f.Peer} {
		for range 3 + r.IntN(4) {
			u := members[room][r.IntN(len(members[room]))]
			c.blipSends++
			c.doNow(Action{At: c.Now(), User: u, Kind: ActSend, Room: room, Node: node, MsgID: fmt.Sprintf("%s-blip%d", u, c.blipSends)})
		}
	}
}

// timedRecord is the oracle's record of a timed fault: what it touches
// and for how long. A crash is recorded by Crash (and ends when the node
// is up again), an upgrade by Upgrade, a forgery or a steal by its call's
// own event; a partition ends at its heal.
func (c *Cluster) timedRecord(f Fault) *model.Fault {
	now := c.Now()
	mf := &model.Fault{From: now, To: now + f.For, Kind: f.Kind}
	k, ok := plan.Lookup(f.Kind)
	if !ok {
		return mf
	}
	switch k.Touches(f) {
	case plan.TouchNone:
		return nil
	case plan.TouchLinks:
		mf.To, mf.Nodes = -1, c.linkNodes(f)
	case plan.TouchNode:
		mf.Nodes = []string{c.nodes[f.Node].id}
	case plan.TouchRedis:
		mf.Redis = true
	case plan.TouchUser:
		mf.User = f.User
		if f.Kind == model.FaultStall {
			// Offline for its lag, then stalled for For (0: until the
			// liveness phase ends it).
			mf.To = now + f.Lag + f.For
			if f.For == 0 {
				mf.To = -1
			}
		}
	}
	return mf
}

// linkNodes lists the nodes a partition fault cuts, sorted.
func (c *Cluster) linkNodes(f Fault) []string {
	var out []string
	for _, l := range c.links(f) {
		for _, n := range l {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// links lists the one-way links a partition fault cuts.
func (c *Cluster) links(f Fault) [][2]string {
	a := c.nodes[f.Node].id
	if f.Peer < 0 {
		var out [][2]string
		for _, sn := range c.nodes {
			if sn.id != a {
				out = append(out, [2]string{a, sn.id}, [2]string{sn.id, a})
			}
		}
		return out
	}
	b := c.nodes[f.Peer].id
	if f.OneWay {
		return [][2]string{{a, b}}
	}
	return [][2]string{{a, b}, {b, a}}
}

// FlushRoutes deletes every routing entry (loss of routing keys).
func (c *Cluster) FlushRoutes() { FlushRoutes(c.Redis) }

// FlushRoutes deletes every routing entry of m, in key order.
func FlushRoutes(m *miniredis.Miniredis) {
	keys := m.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "route:") {
			m.Del(k)
		}
	}
}

// sharedRooms returns the recorded memberships and, sorted, the rooms
// with more than one member: where a burst of sends finds someone to
// relay to.
func (c *Cluster) sharedRooms() (map[string][]string, []string) {
	members := c.rec.members()
	var rooms []string
	for room, us := range members {
		if len(us) > 1 {
			rooms = append(rooms, room)
		}
	}
	sort.Strings(rooms)
	return members, rooms
}

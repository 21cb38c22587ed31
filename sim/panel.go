// The cluster's control panel as the plan's fault kinds see it
// (plan.Panel): each fault kind's Apply (sim/plan/fault_<kind>.go) does
// its fault through these, and Inject (chaos.go) hands them the panel.

package sim

import (
	"fmt"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/plan"
)

// panel is the cluster's plan.Panel.
type panel struct{ c *Cluster }

var _ plan.Panel = panel{}

func (p panel) Now() time.Duration { return p.c.Now() }

func (p panel) Crash(node int) { p.c.Crash(node) }

func (p panel) Restart(node int) {
	if err := p.c.Restart(node); err != nil {
		p.c.Trace.Event(p.c.Now(), "chaos", "restart n%d failed: %v", node+1, err)
	}
}

func (p panel) Replace(verb string, node, protocol int, overlap bool, lag time.Duration) {
	var o *Overlap
	if overlap {
		o = &Overlap{Lag: lag}
	}
	if err := p.c.Replace(node, protocol, o); err != nil {
		p.c.Trace.Event(p.c.Now(), "chaos", "%s n%d failed: %v", verb, node+1, err)
	}
}

func (p panel) Protocol(node int) int { return p.c.nodes[node].protocol }

func (p panel) Cut(f Fault) {
	for _, l := range p.c.links(f) {
		p.c.Net.Cut(l[0], l[1])
		p.c.faults.unblip(l) // the partition's heal restores it
	}
}

func (p panel) Heal(f Fault) {
	p.c.rec.endPartition(p.c.linkNodes(f), p.c.Now())
	for _, l := range p.c.links(f) {
		p.c.Net.Uncut(l[0], l[1])
	}
}

func (p panel) Blip(f Fault) {
	for _, l := range p.c.links(f) {
		switch {
		case !f.End && !p.c.Net.Blocked(l[0], l[1]):
			p.c.Net.Cut(l[0], l[1])
			p.c.faults.blip(l)
		case f.End && p.c.faults.unblip(l):
			p.c.Net.Uncut(l[0], l[1])
		}
	}
	if !f.End {
		p.c.blipBurst(f)
	}
}

func (p panel) Pause(node int, until time.Duration) { p.c.Sched.Pause(p.c.nodes[node].id, until) }

func (p panel) RedisOutage(from, to time.Duration) {
	p.c.faults.outages = append(p.c.faults.outages, [2]time.Duration{from, to})
}

func (p panel) RedisSpike(from, to, extra time.Duration) { p.c.faults.addSpike(from, to, extra) }

func (p panel) FlushRoutes() { p.c.FlushRoutes() }

func (p panel) Do(a Action) { p.c.Do(a) }

func (p panel) DoNow(a Action) { p.c.doNow(a) }

func (p panel) Forge(f Forgery, by string) { p.c.Forge(f, by) }

// snapshotDB is the miniredis database a redis-rewind keeps its snapshot
// in (the relay uses database 0 only). Its keys age with the clock as
// database 0's do: a key that expired since the snapshot is not restored,
// as with real Redis' absolute expiry times.
const snapshotDB = 15

// RedisSnapshot copies Redis' data aside and opens the rewind's record:
// whatever is written from now until RedisRestore may be lost.
//
// One snapshot is held at a time: a snapshot asked for while another is
// held (a failover inside a rewind's window) is not taken, and one later
// restore is skipped for it, so that Redis goes back once, to the older
// snapshot, and the record's window is the data that was lost.
func (p panel) RedisSnapshot(node int) {
	if p.c.rewinding != 0 {
		p.c.snapshotsSkipped++
		p.c.Trace.Event(p.c.Now(), "chaos", "redis snapshot for n%d not taken: n%d's is held", node+1, p.c.rewinding)
		return
	}
	p.c.rewinding = node + 1
	m := p.c.Redis
	m.DB(snapshotDB).FlushDB()
	for _, k := range m.Keys() {
		if err := m.Copy(0, k, snapshotDB, k); err != nil {
			p.c.Trace.Event(p.c.Now(), "chaos", "redis-rewind: snapshot of %q: %v", k, err)
		}
	}
	p.c.rec.fault(model.Fault{From: p.c.Now(), To: -1, Kind: model.FaultRedisRewind, Redis: true})
}

// finishRewind restores a rewind the fault phase ended before its end
// (the liveness phase calls it): Redis goes back to the snapshot and the
// node restarted across it restarts once more, as the rewind's end would
// have done.
func (c *Cluster) finishRewind() error {
	c.snapshotsSkipped = 0
	if c.rewinding == 0 {
		return nil
	}
	node := c.rewinding - 1
	panel{c}.RedisRestore(node)
	c.Trace.Event(c.Now(), "chaos", "liveness: redis-rewind n%d over", node+1)
	return c.drive(func() error { return c.Replace(node, c.nodes[node].protocol, nil) })
}

// RedisRestore puts the snapshot back in place of Redis' data and closes
// the rewind's record.
func (p panel) RedisRestore(node int) {
	if p.c.rewinding == 0 || p.c.rewinding != node+1 && p.c.snapshotsSkipped > 0 {
		if p.c.snapshotsSkipped > 0 {
			p.c.snapshotsSkipped--
		}
		p.c.Trace.Event(p.c.Now(), "chaos", "redis restore for n%d skipped: its snapshot was not taken", node+1)
		return
	}
	p.c.rewinding = 0
	m := p.c.Redis
	m.SwapDB(0, snapshotDB)
	m.DB(snapshotDB).FlushDB()
	p.c.rec.endFault(model.FaultRedisRewind, "", p.c.Now())
}

// RewindBurst has a few members of one room send through node, as
// the traffic of the moment would after a restart: a node restarted
// across a rewind relays to its peers on links its new epoch names (so
// that a peer sees them before the rewind and after it). The draws come
// from the rewind's own sub-seed, keyed by the time.
func (p panel) RewindBurst(node int) {
	c := p.c
	members, rooms := c.sharedRooms()
	if len(rooms) == 0 {
		return
	}
	r := c.seeds.faults.Derive("rewind-burst").Derive(c.Now().String()).Rand()
	// The room with the most members connected to other nodes: the
	// burst's relays leave node for as many peers as can be.
	room, most := rooms[r.IntN(len(rooms))], 0
	for _, rm := range rooms {
		n := 0
		for _, u := range members[rm] {
			if cl := c.users[u]; cl != nil && cl.connectedTo() >= 0 && cl.connectedTo() != node {
				n++
			}
		}
		if n > most {
			room, most = rm, n
		}
	}
	us := members[room]
	// Two members move to node (a client sends through the node it is
	// connected to; the restart sent its own users elsewhere), then send.
	senders := []string{us[r.IntN(len(us))], us[r.IntN(len(us))]}
	for _, u := range senders {
		c.doNow(Action{At: c.Now(), User: u, Kind: ActConnect, Node: node})
	}
	at := c.Now() + rewindBurstAfter
	for range 3 + r.IntN(4) {
		u := senders[r.IntN(len(senders))]
		c.rewindSends++
		c.doNow(Action{At: at, User: u, Kind: ActSend, Room: room, Node: node, MsgID: fmt.Sprintf("rwb%d", c.rewindSends)})
	}
}

// rewindBurstAfter is how long after its connects a rewind's burst sends.
const rewindBurstAfter = 300 * time.Millisecond

// connectedTo is the node the client's stream is open on (-1: none).
func (cl *Client) connectedTo() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.stream != nil && !cl.stream.vanished {
		return cl.stream.node
	}
	return -1
}
func (p panel) Flood(f Fault) { p.c.flood(f) }

func (p panel) Supersede(node int, linger time.Duration) { p.c.Supersede(node, linger) }

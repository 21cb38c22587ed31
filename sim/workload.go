package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// WorkloadConfig shapes a generated workload.
type WorkloadConfig struct {
	Users, Rooms, Nodes int
	// Duration of the workload (the fault phase).
	Duration time.Duration
	// Rate is sends per second across all users.
	Rate float64
	// Churn is membership and connection changes per second.
	Churn float64
	// Tick quantises action times: a coarse tick puts many operations at
	// the same virtual instant (a dense workload, where order matters).
	Tick time.Duration
	// RoomsPerUser is how many rooms each user joins at the start.
	RoomsPerUser int
	// Calm keeps membership still once traffic starts: churn only moves
	// connections (reconnects, going offline), so no join or leave is
	// concurrent with a send (the mode-equivalence workload, DESIGN §4).
	Calm bool
}

// Workload is a generated sequence of client actions.
type Workload struct {
	Users   []string
	Rooms   []string
	Actions []Action
}

// Generate draws a workload from seed: set-up (rooms created, users join
// rooms and connect), then sends and churn until Duration.
func Generate(seed Seed, w WorkloadConfig) Workload {
	r := seed.Rand()
	g := &gen{r: r, w: w, member: map[string]map[string]bool{}, msgs: map[string]int{}}
	wl := Workload{Users: names("u", w.Users), Rooms: names("r", w.Rooms)}
	g.wl = &wl
	for _, room := range wl.Rooms {
		g.add(Action{At: 0, User: wl.Users[0], Kind: ActCreate, Room: room})
	}
	for _, u := range wl.Users {
		g.member[u] = map[string]bool{}
		for _, room := range g.pick(wl.Rooms, max(1, min(w.RoomsPerUser, w.Rooms))) {
			g.add(Action{At: w.Tick, User: u, Kind: ActJoin, Room: room})
			g.member[u][room] = true
		}
		g.add(Action{At: 2 * w.Tick, User: u, Kind: ActConnect, Node: r.IntN(w.Nodes)})
	}
	start := 4 * w.Tick
	for t := start; t < w.Duration; t += w.Tick {
		for range g.count(w.Rate) {
			g.send(t)
		}
		for range g.count(w.Churn) {
			g.churn(t)
		}
	}
	if w.Calm {
		g.bursts(seed.Derive("bursts"), start)
	}
	sort.SliceStable(wl.Actions, func(i, j int) bool { return wl.Actions[i].At < wl.Actions[j].At })
	return wl
}

// bursts adds, to a calm workload, a few bursts: several sends of one
// room through one node at one virtual instant, so their relays queue on
// the same links together and a stream link writes them on one stream
// (batching, which faults alone exercised before). Membership is still
// in a calm workload, so every sender is a member. The draws come from
// their own seed: the rest of the workload does not move.
func (g *gen) bursts(seed Seed, start time.Duration) {
	r := seed.Rand()
	ticks := int((g.w.Duration - start) / g.w.Tick)
	if ticks <= 0 {
		return
	}
	sent := map[string]int{}
	for range 2 + r.IntN(4) {
		at := start + time.Duration(r.IntN(ticks))*g.w.Tick
		room := g.wl.Rooms[r.IntN(len(g.wl.Rooms))]
		var members []string
		for _, u := range g.wl.Users {
			if g.member[u][room] {
				members = append(members, u)
			}
		}
		if len(members) == 0 {
			continue
		}
		node := r.IntN(g.w.Nodes)
		for range 2 + r.IntN(5) {
			u := members[r.IntN(len(members))]
			sent[u]++
			g.add(Action{At: at, User: u, Kind: ActSend, Room: room, MsgID: fmt.Sprintf("%s-b%d", u, sent[u]), Node: node})
		}
	}
}

type gen struct {
	r      *rand.Rand
	w      WorkloadConfig
	wl     *Workload
	member map[string]map[string]bool
	msgs   map[string]int
}

func (g *gen) add(a Action) { g.wl.Actions = append(g.wl.Actions, a) }

// count draws how many events of a per-second rate fall in one tick.
func (g *gen) count(rate float64) int {
	x := rate * g.w.Tick.Seconds()
	n := int(x)
	if g.r.Float64() < x-float64(n) {
		n++
	}
	return n
}

func (g *gen) send(t time.Duration) {
	u := g.wl.Users[g.r.IntN(len(g.wl.Users))]
	rooms := g.rooms(u)
	if len(rooms) == 0 {
		return
	}
	g.msgs[u]++
	room := rooms[g.r.IntN(len(rooms))]
	g.add(Action{At: t, User: u, Kind: ActSend, Room: room, MsgID: fmt.Sprintf("%s-m%d", u, g.msgs[u]), Node: g.r.IntN(g.w.Nodes)})
}

func (g *gen) churn(t time.Duration) {
	u := g.wl.Users[g.r.IntN(len(g.wl.Users))]
	kind := g.r.IntN(4)
	if g.w.Calm {
		kind = 2 + kind%2
	}
	switch kind {
	case 0: // join another room
		room := g.wl.Rooms[g.r.IntN(len(g.wl.Rooms))]
		g.member[u][room] = true
		g.add(Action{At: t, User: u, Kind: ActJoin, Room: room, Node: g.r.IntN(g.w.Nodes)})
	case 1: // leave one
		if rooms := g.rooms(u); len(rooms) > 0 {
			room := rooms[g.r.IntN(len(rooms))]
			delete(g.member[u], room)
			g.add(Action{At: t, User: u, Kind: ActLeave, Room: room, Node: g.r.IntN(g.w.Nodes)})
		}
	case 2: // move to another node (reconnect with cursors)
		g.add(Action{At: t, User: u, Kind: ActConnect, Node: g.r.IntN(g.w.Nodes)})
	case 3: // go offline for a while
		g.add(Action{At: t, User: u, Kind: ActDisconnect})
		back := t + time.Duration(1+g.r.IntN(20))*g.w.Tick
		if back < g.w.Duration {
			g.add(Action{At: back, User: u, Kind: ActConnect, Node: g.r.IntN(g.w.Nodes)})
		}
	}
}

func (g *gen) rooms(u string) []string {
	var out []string
	for _, room := range g.wl.Rooms {
		if g.member[u][room] {
			out = append(out, room)
		}
	}
	return out
}

func (g *gen) pick(from []string, k int) []string {
	idx := g.r.Perm(len(from))[:k]
	sort.Ints(idx)
	out := make([]string, k)
	for i, j := range idx {
		out[i] = from[j]
	}
	return out
}

// names returns prefix1..prefixN, zero-padded so they sort numerically.
func names(prefix string, n int) []string {
	width := len(fmt.Sprint(n))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%0*d", prefix, width, i+1)
	}
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

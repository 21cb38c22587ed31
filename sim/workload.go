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
	// Names is the alphabet of room and user names (NamesDrawn: each
	// seed draws ASCII or wide).
	Names NameStyle
	// Alphabet widens node ids and malformed names (AlphabetWide; plain,
	// the default, draws nothing of it).
	Alphabet Alphabet
}

// Workload is a generated sequence of client actions.
type Workload struct {
	Users   []string
	Rooms   []string
	Actions []Action
}

// Generate draws a workload from seed: set-up (rooms created, users join
// rooms and connect), then sends and churn until Duration, and a few calls
// naming malformed names (planBadNames). The names' alphabet and the
// malformed calls are drawn from sub-seeds of their own, so they move no
// other draw.
func Generate(seed Seed, w WorkloadConfig) Workload {
	r := seed.Rand()
	g := &gen{r: r, sizes: seed.Derive("sizes").Rand(), w: w, member: map[string]map[string]bool{}, msgs: map[string]int{}, tag: map[string]string{}}
	wl := Workload{Users: names("u", w.Users), Rooms: names("r", w.Rooms)}
	tags := wl.Users
	if w.Names.wide(seed) {
		nr := seed.Derive("names").Derive("wide").Rand()
		wl.Users, tags = WideNames(nr, w.Users)
		wl.Rooms, _ = WideNames(nr, w.Rooms)
	}
	for i, u := range wl.Users {
		g.tag[u] = tags[i]
	}
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
	// Quiet rooms first: a burst is a burst even in a quiet room.
	wl.Actions = quietRooms(seed.Derive("quiet-rooms"), wl.Rooms, wl.Actions)
	if w.Calm {
		g.bursts(seed.Derive("bursts"), start)
	}
	wl.Actions = append(wl.Actions, planBadNames(seed, wl.Users, wl.Rooms, w.Nodes, start, w.Duration)...)
	if w.Alphabet == AlphabetWide {
		wl.Actions = append(wl.Actions, planFormatName(seed, wl.Users, wl.Rooms, w.Nodes, start, w.Duration, 4)...)
	}
	sort.SliceStable(wl.Actions, func(i, j int) bool { return wl.Actions[i].At < wl.Actions[j].At })
	return wl
}

// quietRooms makes some rooms quiet: each room, drawn from its own
// sub-seed (so that no other draw moves), is quiet with probability 1/3,
// and a quiet room keeps one send in 6 to 15 of those generated for it,
// a message every second or two at the default rate. Busy rooms fill a
// lost relay's gap with their next live message within the live bound; in
// a quiet room a message is often the last one for a while, and what
// becomes of its relay shows (a stream item lost between its read and
// its delivery is only caught there).
func quietRooms(seed Seed, rooms []string, actions []Action) []Action {
	r := seed.Rand()
	every := map[string]int{}
	for _, room := range rooms {
		quiet, n := r.IntN(3) == 0, 6+r.IntN(10)
		if quiet {
			every[room] = n
		}
	}
	if len(every) == 0 {
		return actions
	}
	sent := map[string]int{}
	out := actions[:0]
	for _, a := range actions {
		if n, quiet := every[a.Room]; quiet && a.Kind == ActSend {
			sent[a.Room]++
			if sent[a.Room]%n != 1 {
				continue
			}
		}
		out = append(out, a)
	}
	return out
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
	r *rand.Rand
	// sizes draws the sends' payload sizes (its own sub-seed: the other
	// draws do not move).
	sizes  *rand.Rand
	w      WorkloadConfig
	wl     *Workload
	member map[string]map[string]bool
	msgs   map[string]int
	// tag is each user's short form, for message ids (a user's name may
	// be as long as a message id may be).
	tag map[string]string
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
	g.add(Action{At: t, User: u, Kind: ActSend, Room: room, MsgID: fmt.Sprintf("%s-m%d", g.tag[u], g.msgs[u]), Node: g.r.IntN(g.w.Nodes), Size: g.size()})
}

// size draws a send's payload size: a quarter of the sends are padded to
// 32..512 bytes (within the default MaxPayload, beyond the smallest a
// mixed cluster draws, DrawLimits), the others keep their short payload.
func (g *gen) size() int {
	padded, n := g.sizes.IntN(4) == 0, 32+g.sizes.IntN(481)
	if !padded {
		return 0
	}
	return n
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

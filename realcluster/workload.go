package realcluster

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// actKind names a planned client action.
type actKind int

const (
	actSend actKind = iota
	actJoin
	actLeave
	actConnect    // move the stream to Node (reconnect with cursors)
	actDisconnect // go offline; a later actConnect brings the user back
	actForge      // a forged call (Forge)
)

// action is one planned client action at At after the load phase began.
type action struct {
	At    time.Duration
	Kind  actKind
	Room  string
	Node  int
	Forge forgery
}

// forgery is a forged call: a send or join naming As, with a credential
// of form Form (other-user, garbage or wrong-secret).
type forgery struct {
	Call, As, Form, MsgID string
}

// plan is a seeded workload: the rooms, each user's initial rooms and
// node, and each user's actions in time order.
type plan struct {
	Users   []string
	Rooms   []string
	Initial map[string][]string
	Node    map[string]int
	Actions map[string][]action
}

func names(prefix string, n int) []string {
	width := len(fmt.Sprint(n))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%0*d", prefix, width, i+1)
	}
	return out
}

// newPlan draws the workload from the seed: sends at cfg.Rate and churn
// (joins, leaves, moves, offline spells) at cfg.Churn across the load
// phase, in steps of tick; membership is tracked so that sends and leaves
// name rooms the user joined. forges are the forged calls to place.
func newPlan(cfg Config, forges int) plan {
	r := rand.New(rand.NewPCG(cfg.Seed, hashString("workload")))
	p := plan{Users: names("u", cfg.Users), Rooms: names("r", cfg.Rooms), Initial: map[string][]string{},
		Node: map[string]int{}, Actions: map[string][]action{}}
	member := map[string]map[string]bool{}
	for _, u := range p.Users {
		member[u] = map[string]bool{}
		for _, i := range r.Perm(cfg.Rooms)[:min(cfg.RoomsPerUser, cfg.Rooms)] {
			member[u][p.Rooms[i]] = true
			p.Initial[u] = append(p.Initial[u], p.Rooms[i])
		}
		sort.Strings(p.Initial[u])
		p.Node[u] = r.IntN(cfg.Nodes)
	}
	const tick = 50 * time.Millisecond
	count := func(rate float64) int {
		x := rate * tick.Seconds()
		n := int(x)
		if r.Float64() < x-float64(n) {
			n++
		}
		return n
	}
	add := func(u string, a action) { p.Actions[u] = append(p.Actions[u], a) }
	rooms := func(u string) []string {
		var out []string
		for _, room := range p.Rooms {
			if member[u][room] {
				out = append(out, room)
			}
		}
		return out
	}
	for t := tick; t < cfg.Duration; t += tick {
		for range count(cfg.Rate) {
			u := p.Users[r.IntN(len(p.Users))]
			if rs := rooms(u); len(rs) > 0 {
				add(u, action{At: t, Kind: actSend, Room: rs[r.IntN(len(rs))], Node: r.IntN(cfg.Nodes)})
			}
		}
		for range count(cfg.Churn) {
			u := p.Users[r.IntN(len(p.Users))]
			switch r.IntN(4) {
			case 0:
				room := p.Rooms[r.IntN(len(p.Rooms))]
				member[u][room] = true
				add(u, action{At: t, Kind: actJoin, Room: room, Node: r.IntN(cfg.Nodes)})
			case 1:
				if rs := rooms(u); len(rs) > 1 {
					room := rs[r.IntN(len(rs))]
					delete(member[u], room)
					add(u, action{At: t, Kind: actLeave, Room: room, Node: r.IntN(cfg.Nodes)})
				}
			case 2:
				add(u, action{At: t, Kind: actConnect, Node: r.IntN(cfg.Nodes)})
			case 3:
				add(u, action{At: t, Kind: actDisconnect})
				if back := t + time.Duration(1+r.IntN(40))*tick; back < cfg.Duration {
					add(u, action{At: back, Kind: actConnect, Node: r.IntN(cfg.Nodes)})
				}
			}
		}
	}
	p.addForgeries(r, cfg, forges)
	for _, u := range p.Users {
		sort.SliceStable(p.Actions[u], func(i, j int) bool { return p.Actions[u][i].At < p.Actions[u][j].At })
	}
	return p
}

var forgeryForms = []string{"other-user", "garbage", "wrong-secret"}

// addForgeries places n forged calls across the load phase, each naming
// another user than the one that makes it (as the simulator's forge).
func (p *plan) addForgeries(r *rand.Rand, cfg Config, n int) {
	for i := range n {
		at := time.Duration(r.Int64N(int64(cfg.Duration)))
		by, as := r.IntN(len(p.Users)), 0
		if len(p.Users) > 1 {
			as = (by + 1 + r.IntN(len(p.Users)-1)) % len(p.Users)
		}
		f := forgery{Call: []string{"send", "join"}[r.IntN(2)], As: p.Users[as], Form: forgeryForms[r.IntN(len(forgeryForms))]}
		if as == by && f.Form == "other-user" {
			f.Form = "garbage" // alone in the run: its own credential would be valid
		}
		if f.Call == "send" {
			f.MsgID = fmt.Sprintf("forged%d", i+1)
		}
		u := p.Users[by]
		p.Actions[u] = append(p.Actions[u], action{At: at, Kind: actForge, Room: p.Rooms[r.IntN(len(p.Rooms))], Node: r.IntN(cfg.Nodes), Forge: f})
	}
}

// size is the number of planned actions.
func (p plan) size() int {
	n := 0
	for _, as := range p.Actions {
		n += len(as)
	}
	return n
}

package experiments

import (
	"fmt"
	"strings"
	"time"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// Fanout is the timing of one message's fan-out on the sending node, as
// the seed's benchmark timed sendMessageToChatRoom's network path: from
// the end of sequencing (the Lua script released by Redis) until the last
// relay call's response is back (its rpc.done gate), averaged over the
// messages of the run. Virtual milliseconds.
type Fanout struct {
	Mode     string  `json:"mode"`
	Users    int     `json:"users"`
	Remote   int     `json:"remote_nodes"`
	Workers  int     `json:"workers,omitempty"`
	Messages int     `json:"messages"`
	Mean     float64 `json:"mean_ms"`
	Max      float64 `json:"max_ms"`
	Seed     float64 `json:"seed_total_ms,omitempty"`
}

// fanout runs messages one at a time (spaced out so that they never
// overlap) from a sender alone on n1 to users spread over the other nodes.
func fanout(o Options, mode system.Mode, users, remote, workers, messages int) Fanout {
	var as []sim.Action
	names := []string{"s"}
	for i := range users {
		names = append(names, fmt.Sprintf("u%04d", i+1))
	}
	as = append(as, sim.Action{At: 0, User: "s", Kind: sim.ActCreate, Room: "r1"})
	for i, u := range names {
		node := 0
		if i > 0 {
			node = 1 + (i-1)%remote
		}
		as = append(as, sim.Action{At: 50 * time.Millisecond, User: u, Kind: sim.ActJoin, Room: "r1", Node: node})
		as = append(as, sim.Action{At: 100 * time.Millisecond, User: u, Kind: sim.ActConnect, Node: node})
	}
	for k := range messages {
		as = append(as, sim.Action{At: warmUp + time.Duration(k)*500*time.Millisecond, User: "s", Kind: sim.ActSend, Room: "r1", MsgID: fmt.Sprintf("s-m%d", k+1)})
	}
	load := time.Duration(messages) * 500 * time.Millisecond
	cfg := Config(o, mode, len(names), as, load)
	cfg.Nodes = 1 + remote
	cfg.Drain = 2 * time.Second
	if workers > 0 {
		cfg.Executor = system.ExecutorConfig{Core: workers, Max: workers, Queue: 1000, KeepAlive: 60 * time.Second}
	}
	var starts, ends []time.Duration
	cfg.OnRelease = func(op *sim.Op, now time.Duration) {
		switch {
		case op.Node == "n1" && op.Kind == sim.KindRedis && strings.HasPrefix(op.ID, "send r1 s-m") && strings.Contains(op.ID, " evalsha "):
			starts = append(starts, now)
			ends = append(ends, now)
		case op.Node == "n1" && op.Kind == sim.KindRPCDone && len(ends) > 0:
			ends[len(ends)-1] = now
		}
	}
	sim.Run(o.T, cfg)
	f := Fanout{Mode: string(mode), Users: users, Remote: remote, Workers: workers, Messages: len(starts)}
	for i := range starts {
		d := float64(ends[i]-starts[i]) / float64(time.Millisecond)
		f.Mean += d
		f.Max = max(f.Max, d)
	}
	if len(starts) > 0 {
		f.Mean /= float64(len(starts))
	}
	return f
}

// Scenario1 is seed parallel-vs-bulk-relay's Scenario 1: 200 remote users
// on one remote node, single vs bulk. The seed: 36.4 ms vs 1.2 ms (~30x).
func Scenario1(o Options, messages int) (single, bulk Fanout) {
	single = fanout(o, system.ModeSingle, 200, 1, 0, messages)
	single.Seed = 36.4
	bulk = fanout(o, system.ModeBulk, 200, 1, 0, messages)
	bulk.Seed = 1.2
	return single, bulk
}

// Scenario2Seed is the seed's Scenario 2 (total ms), by users then workers 1..4.
var Scenario2Seed = map[int][]float64{
	200:  {1.84, 1.49, 1.22, 1.30},
	500:  {1.98, 1.59, 1.35, 1.37},
	1000: {2.26, 1.78, 1.57, 1.60},
}

// Scenario2Users are the seed's room sizes of Scenario 2.
var Scenario2Users = []int{200, 500, 1000}

// Scenario2 is seed parallel-vs-bulk-relay's Scenario 2: 3 remote nodes,
// bulk relay on a pool of 1..4 workers, 200/500/1000 users.
func Scenario2(o Options, users []int, messages int) []Fanout {
	var out []Fanout
	for _, u := range users {
		for w := 1; w <= 4; w++ {
			if o.Progress != nil {
				o.Progress(fmt.Sprintf("scenario 2: %d users, %d workers", u, w))
			}
			f := fanout(o, system.ModeBulk, u, 3, w, messages)
			if s, ok := Scenario2Seed[u]; ok {
				f.Seed = s[w-1]
			}
			out = append(out, f)
		}
	}
	return out
}

// Best returns the pool size with the lowest mean for users (ties: the
// smallest pool).
func Best(rows []Fanout, users int) int {
	best, bestMean := 0, 0.0
	for _, f := range rows {
		if f.Users == users && (best == 0 || f.Mean < bestMean-1e-9) {
			best, bestMean = f.Workers, f.Mean
		}
	}
	return best
}

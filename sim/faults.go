package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// FaultBounds are the most any seed may draw (the runner's flags).
type FaultBounds struct {
	// Network is the highest per-RPC probability of a dropped request, a
	// dropped response, a duplicate or a delay of a node-to-node relay.
	Network float64
	// RedisErrors is the highest per-command error probability.
	RedisErrors float64
	// The largest number of each timed fault in a run's fault phase.
	Crashes, Partitions, Pauses, RedisOutages, RouteFlushes, Vanishes, SlowConsumers int
	// RedisSpikes are windows in which every Redis command is slow.
	RedisSpikes int
}

// DefaultBounds is the runner's default.
func DefaultBounds() FaultBounds {
	return FaultBounds{Network: 0.05, RedisErrors: 0.01, Crashes: 1, Partitions: 2, Pauses: 1, RedisOutages: 1, RouteFlushes: 1, Vanishes: 3, SlowConsumers: 1, RedisSpikes: 1}
}

// NoFaults turns every fault off.
func NoFaults() FaultBounds { return FaultBounds{} }

// FaultMix is what one seed drew: swarm testing switches each fault on or off
// per seed and draws its intensity, so some seeds see heavy loss and no
// crash, others the opposite.
type FaultMix struct {
	DropRequest, DropResponse, Duplicate, Delay, RedisError                          float64
	Crashes, Partitions, Pauses, RedisOutages, RouteFlushes, Vanishes, SlowConsumers int
	RedisSpikes                                                                      int
}

// DrawMix draws a seed's fault mix within b.
func DrawMix(seed Seed, b FaultBounds) FaultMix {
	r := seed.Rand()
	p := func(max float64) float64 {
		if max <= 0 || r.IntN(2) == 0 {
			return 0
		}
		return float64(int(r.Float64()*max*1000)) / 1000
	}
	n := func(max int) int {
		if max <= 0 || r.IntN(2) == 0 {
			return 0
		}
		return 1 + r.IntN(max)
	}
	return FaultMix{
		DropRequest: p(b.Network), DropResponse: p(b.Network), Duplicate: p(b.Network), Delay: p(b.Network),
		RedisError: p(b.RedisErrors),
		Crashes:    n(b.Crashes), Partitions: n(b.Partitions), Pauses: n(b.Pauses),
		RedisOutages: n(b.RedisOutages), RouteFlushes: n(b.RouteFlushes), Vanishes: n(b.Vanishes),
		SlowConsumers: n(b.SlowConsumers),
		RedisSpikes:   n(b.RedisSpikes),
	}
}

func (m FaultMix) String() string {
	var parts []string
	add := func(name string, v float64) {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.3f", name, v))
		}
	}
	addN := func(name string, v int) {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", name, v))
		}
	}
	add("drop-req", m.DropRequest)
	add("drop-resp", m.DropResponse)
	add("dup", m.Duplicate)
	add("delay", m.Delay)
	add("redis-err", m.RedisError)
	addN("crash", m.Crashes)
	addN("partition", m.Partitions)
	addN("pause", m.Pauses)
	addN("redis-outage", m.RedisOutages)
	addN("route-flush", m.RouteFlushes)
	addN("vanish", m.Vanishes)
	addN("slow-consumer", m.SlowConsumers)
	addN("redis-spike", m.RedisSpikes)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Fault is one timed fault of the fault phase.
type Fault struct {
	At   time.Duration
	Kind string // crash, restart, partition, heal, pause, redis-outage, redis-spike, route-flush, vanish, slow
	Node int    // node index (crash, restart, pause, partition side a)
	Peer int    // partition side b (-1: isolate Node from everyone)
	// OneWay cuts only Node -> Peer.
	OneWay bool
	For    time.Duration
	User   string
}

func (f Fault) String() string {
	switch f.Kind {
	case "partition":
		switch {
		case f.Peer < 0:
			return fmt.Sprintf("isolate n%d for %v", f.Node+1, f.For)
		case f.OneWay:
			return fmt.Sprintf("cut n%d->n%d for %v", f.Node+1, f.Peer+1, f.For)
		}
		return fmt.Sprintf("partition n%d<->n%d for %v", f.Node+1, f.Peer+1, f.For)
	case "crash", "pause":
		return fmt.Sprintf("%s n%d for %v", f.Kind, f.Node+1, f.For)
	case "redis-spike":
		return fmt.Sprintf("redis-spike +%v for %v", redisSpikeLatency, f.For)
	case "restart":
		return fmt.Sprintf("restart n%d", f.Node+1)
	case "heal":
		if f.Peer < 0 {
			return fmt.Sprintf("heal isolated n%d", f.Node+1)
		}
		return fmt.Sprintf("heal n%d/n%d", f.Node+1, f.Peer+1)
	case "vanish", "slow":
		return fmt.Sprintf("%s %s", f.Kind, f.User)
	}
	return fmt.Sprintf("%s for %v", f.Kind, f.For)
}

// PlanFaults places the mix's timed faults inside [start, end).
func PlanFaults(seed Seed, m FaultMix, nodes int, users []string, start, end time.Duration) []Fault {
	r := seed.Rand()
	span := end - start
	if span <= 0 {
		return nil
	}
	at := func() time.Duration { return start + time.Duration(r.Int64N(int64(span))).Truncate(time.Millisecond) }
	dur := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo))).Truncate(time.Millisecond)
	}
	var fs []Fault
	for range m.Crashes {
		fs = append(fs, Fault{At: at(), Kind: "crash", Node: r.IntN(nodes), For: dur(time.Second, 10*time.Second)})
	}
	for range m.Partitions {
		f := Fault{At: at(), Kind: "partition", Node: r.IntN(nodes), Peer: -1, For: dur(time.Second, 10*time.Second)}
		if nodes > 1 && r.IntN(3) > 0 {
			f.Peer = (f.Node + 1 + r.IntN(nodes-1)) % nodes
			f.OneWay = r.IntN(2) == 0
		}
		fs = append(fs, f)
	}
	for range m.Pauses {
		fs = append(fs, Fault{At: at(), Kind: "pause", Node: r.IntN(nodes), For: dur(100*time.Millisecond, 3*time.Second)})
	}
	for range m.RedisOutages {
		fs = append(fs, Fault{At: at(), Kind: "redis-outage", For: dur(100*time.Millisecond, 2*time.Second)})
	}
	for range m.RedisSpikes {
		fs = append(fs, Fault{At: at(), Kind: "redis-spike", For: dur(500*time.Millisecond, 3*time.Second)})
	}
	for range m.RouteFlushes {
		fs = append(fs, Fault{At: at(), Kind: "route-flush"})
	}
	pickUser := func() string { return users[r.IntN(len(users))] }
	for range m.Vanishes {
		if len(users) > 0 {
			fs = append(fs, Fault{At: at(), Kind: "vanish", User: pickUser()})
		}
	}
	for range m.SlowConsumers {
		if len(users) > 0 {
			fs = append(fs, Fault{At: at(), Kind: "slow", User: pickUser(), For: dur(time.Second, 5*time.Second)})
		}
	}
	// A crash is followed by its restart and a partition by its heal.
	for _, f := range fs {
		switch f.Kind {
		case "crash":
			fs = append(fs, Fault{At: f.At + f.For, Kind: "restart", Node: f.Node})
		case "partition":
			fs = append(fs, Fault{At: f.At + f.For, Kind: "heal", Node: f.Node, Peer: f.Peer, OneWay: f.OneWay})
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// decide reports whether a fault of probability p hits the op with key, on
// its k-th occurrence: a function of identity, not of arrival order.
func decide(seed Seed, p float64, key string, k int) bool {
	if p <= 0 {
		return false
	}
	return seed.Unit(fmt.Sprintf("%s#%d", key, k)) < p
}

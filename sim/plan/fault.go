// Faults: the data types of a run's faults — the bounds a seed may draw
// within (FaultBounds), what one seed drew (FaultMix) and one timed fault
// of the fault phase (Fault) — and their trace text. The draws are in
// sim/faults.go, the injector that applies them in sim/chaos.go.

package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
)

// FaultKind names what the simulator did to the system (model's kinds:
// the oracle and the trace share them).
type FaultKind = model.FaultKind

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
	// Forgeries are calls made with a forged credential (forge.go): each
	// is one of 8 methods with one of 8 shapes, and costs one refused
	// call, so the bound is high enough that a run tries several pairs.
	Forgeries int
	// Steals are sends with another user's client message id (steal.go).
	Steals int
	// RecvBreaks is the highest per-item probability that a relay
	// stream breaks between the receiver's read of an item and its
	// delivery (the stream.deliver gate; streamhooks.go cutAtDeliver).
	RecvBreaks float64
	// Blips are short cuts of one link between two nodes, shorter than a
	// stream writer's give-up budget (blipMax).
	Blips int
}

// DefaultBounds is the runner's default.
func DefaultBounds() FaultBounds {
	return FaultBounds{Network: 0.05, RedisErrors: 0.01, Crashes: 1, Partitions: 2, Pauses: 1, RedisOutages: 1, RouteFlushes: 1, Vanishes: 3, SlowConsumers: 1, RedisSpikes: 1, Forgeries: 12, Steals: 3, RecvBreaks: 0.2, Blips: 4}
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
	Forgeries                                                                        int
	Steals                                                                           int
	// RecvBreak is the per-item probability of a recv-break.
	RecvBreak float64
	Blips     int
}

// The names the network faults' draws are seeded from (sub-seeds of a
// seed's fault seed, for its mix and for each operation's draw), and the
// mix's names for them: renaming one moves every drawn fault.
const (
	DrawDropRequest  = "drop-req"
	DrawDropResponse = "drop-resp"
	DrawDuplicate    = "dup"
	DrawDelay        = "delay"
	DrawRecvBreak    = "recv-break"
)

// NetFaults reports whether any per-relay network fault can be drawn.
func (m FaultMix) NetFaults() bool {
	return m.DropRequest > 0 || m.DropResponse > 0 || m.Duplicate > 0 || m.Delay > 0
}

// RedisSpikeLatency is what a latency spike adds to every Redis command.
const RedisSpikeLatency = 50 * time.Millisecond

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
	add(DrawDropRequest, m.DropRequest)
	add(DrawDropResponse, m.DropResponse)
	add(DrawDuplicate, m.Duplicate)
	add(DrawDelay, m.Delay)
	add("redis-err", m.RedisError)
	addN("crash", m.Crashes)
	addN("partition", m.Partitions)
	addN("pause", m.Pauses)
	addN("redis-outage", m.RedisOutages)
	addN("route-flush", m.RouteFlushes)
	addN("vanish", m.Vanishes)
	addN("slow-consumer", m.SlowConsumers)
	addN("redis-spike", m.RedisSpikes)
	addN("forge", m.Forgeries)
	addN("steal", m.Steals)
	add(DrawRecvBreak, m.RecvBreak)
	addN("blip", m.Blips)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Fault is one timed fault of the fault phase.
type Fault struct {
	At   time.Duration
	Kind model.FaultKind // one of the timed kinds: crash, restart, upgrade, partition, heal, pause, redis-outage, redis-spike, route-flush, vanish, slow, forge, steal
	Node int             // node index (crash, restart, pause, partition side a)
	Peer int             // partition side b (-1: isolate Node from everyone)
	// OneWay cuts only Node -> Peer.
	OneWay bool
	For    time.Duration
	User   string
	// Protocol is the version an upgrade restarts the node with.
	Protocol int
	// Forge is a forge fault's call, made by User's client.
	Forge Forgery
	// Steal is a steal fault's send, made by User's client.
	Steal Steal
	// Overlap makes a crash or an upgrade a graceful restart whose new
	// incarnation starts before the old one has finished stopping; Lag is
	// how long the stopping incarnation is held after each Redis command
	// of its stop (a process busy draining, descheduled between its
	// commands), so that its successor's start lands among them.
	Overlap bool
	Lag     time.Duration
	// End marks the end of a blip (its links restored).
	End bool
}

func (f Fault) String() string {
	switch f.Kind {
	case model.FaultPartition:
		switch {
		case f.Peer < 0:
			return fmt.Sprintf("isolate n%d for %v", f.Node+1, f.For)
		case f.OneWay:
			return fmt.Sprintf("cut n%d->n%d for %v", f.Node+1, f.Peer+1, f.For)
		}
		return fmt.Sprintf("partition n%d<->n%d for %v", f.Node+1, f.Peer+1, f.For)
	case model.FaultCrash, model.FaultPause:
		if f.Overlap {
			return fmt.Sprintf("restart n%d overlapping (lag %v)", f.Node+1, f.Lag)
		}
		return fmt.Sprintf("%s n%d for %v", f.Kind, f.Node+1, f.For)
	case model.FaultRedisSpike:
		return fmt.Sprintf("redis-spike +%v for %v", RedisSpikeLatency, f.For)
	case model.FaultRestart:
		return fmt.Sprintf("restart n%d", f.Node+1)
	case model.FaultUpgrade:
		if f.Overlap {
			return fmt.Sprintf("upgrade n%d to v%d overlapping (lag %v)", f.Node+1, f.Protocol, f.Lag)
		}
		return fmt.Sprintf("upgrade n%d to v%d", f.Node+1, f.Protocol)
	case model.FaultHeal:
		if f.Peer < 0 {
			return fmt.Sprintf("heal isolated n%d", f.Node+1)
		}
		return fmt.Sprintf("heal n%d/n%d", f.Node+1, f.Peer+1)
	case model.FaultVanish, model.FaultSlow:
		return fmt.Sprintf("%s %s", f.Kind, f.User)
	case model.FaultForge:
		return fmt.Sprintf("forge %s by %s", f.Forge, f.User)
	case model.FaultSteal:
		return fmt.Sprintf("steal %s by %s", f.Steal, f.User)
	case model.FaultBlip:
		if f.End {
			return fmt.Sprintf("blip n%d<->n%d over", f.Node+1, f.Peer+1)
		}
		return fmt.Sprintf("blip n%d<->n%d for %v", f.Node+1, f.Peer+1, f.For)
	}
	return fmt.Sprintf("%s for %v", f.Kind, f.For)
}

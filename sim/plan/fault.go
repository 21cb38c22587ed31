// Faults: the data types of a run's faults — the bounds a seed may draw
// within (FaultBounds), what one seed drew (FaultMix) and one timed fault
// of the fault phase (Fault) — and their trace text. The mix is drawn in
// draw.go, each kind's faults placed by its registry entry
// (fault_<kind>.go, through sim's PlanFaults) and applied by sim's
// injector (sim/chaos.go).

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
	// RedisRewinds send Redis back to a snapshot (fault_redisrewind.go).
	RedisRewinds int
	// Floods is the most floods (a user offline while its room gets a
	// backlog) per run: 0 by default, a wide run draws up to 1.
	Floods int
	// Supersedes is the most restarts whose old incarnation lives on (cut
	// off from its peers, not from Redis): 0 by default, a wide run draws
	// up to 1.
	Supersedes int
	// Stalls are clients that stop reading with their connection up
	// (fault_stall.go): 0 by default, so that no default seed moves; the
	// sweep's stall world (Budget.Sweep) turns them on.
	Stalls int
	// Counts are the bounds of the kinds whose Budget names no field of
	// its own, by MixRank: a new kind keeps its count here and edits no
	// file but its own and the registry.
	Counts [MaxMixRank + 1]int
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
	RecvBreak    float64
	Blips        int
	RedisRewinds int
	Floods       int
	Supersedes   int
	Stalls       int
	// Counts are the counts of the kinds whose Budget names no field of
	// its own, by MixRank (FaultBounds.Counts).
	Counts [MaxMixRank + 1]int
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

// String is m's trace text: its non-zero knobs, in FormatMix's order,
// probabilities to three places ("none" when every one is zero).
func (m FaultMix) String() string {
	var parts []string
	for _, f := range mixFields() {
		switch {
		case f.p != nil && *f.p(&m) > 0:
			parts = append(parts, fmt.Sprintf("%s=%.3f", f.name, *f.p(&m)))
		case f.n != nil && *f.n(&m) > 0:
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, *f.n(&m)))
		}
	}
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

// String is f's trace text: its kind's (Kind.Trace).
func (f Fault) String() string {
	if k, ok := Lookup(f.Kind); ok {
		return k.Trace(f)
	}
	return fmt.Sprintf("%s for %v", f.Kind, f.For)
}

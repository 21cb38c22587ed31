package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/relaysim/relaysim/system"
)

// Config is one simulation run.
type Config struct {
	Seed  Seed
	Mode  system.Mode
	Nodes int
	WorkloadConfig
	// Drain is the liveness phase's length (60 s, as in the seeds).
	Drain     time.Duration
	Scheduler string // random | pct | exhaustive | first (the first ready op, no delay: the shrinker's)
	PCTDepth  int
	Bounds    FaultBounds
	Executor  system.ExecutorConfig
	// OutboxSize bounds each client's pending deliveries on a node.
	OutboxSize int
	// StreamBacklog is each node's link backlog bound (queued plus
	// unacknowledged stream items, system.Config.StreamBacklog); 0 lets a
	// faulted seed draw it (DrawStreamBacklog), a fault-free run keep the
	// default.
	StreamBacklog int
	// StreamLinger, when set, replaces each node's stream linger (how
	// long a link's writer keeps a stream open for more items before it
	// closes it for the ack; system.Config.StreamLinger).
	StreamLinger time.Duration
	// ChannelsPerPeer is each node's gRPC connections per peer; 0 lets the
	// seed draw 1-4 (swarm testing of the multi-channel path).
	ChannelsPerPeer int
	// SampleEvery is how often metrics are sampled (virtual time).
	SampleEvery time.Duration
	KeepTrace   bool
	// History, when set, receives the run's history as JSON lines while
	// it runs (historyout.go).
	History io.Writer
	// Chooser, when set, makes the scheduler's picks (rapid draws).
	Chooser Chooser
	// Exhaustive, when set, is the exhaustive strategy to follow.
	Exhaustive *Exhaustive
	// Negative controls for the determinism check.
	ByArrival, Ungated bool
	// Versions is each node's relay protocol version at the start (missing
	// or 0: the latest).
	Versions []int
	// Upgrade, when set, runs the seed as a rolling upgrade: every node
	// starts at Upgrade.From and is restarted with Upgrade.To one at a
	// time, evenly spread over the load phase, under the seed's traffic and
	// faults.
	Upgrade *Upgrade
	// Mixed is the share of seeds whose cluster is mixed, as during a
	// config rollout: nodes differ in MaxPayload, MaxRecipients and (when
	// Versions and Upgrade leave them free) their protocol version, drawn
	// from the seed's "limits" sub-seed (DrawLimits).
	Mixed float64
	// Overlap is the probability that a crash or an upgrade of the fault
	// plan overlaps incarnations: the node is stopped gracefully and its
	// next incarnation starts before the old one has finished stopping (a
	// crash so drawn becomes such a restart). Each draws from the seed's
	// "overlap" sub-seed (MarkOverlaps). It is not a fault of its own, so
	// the calm variant keeps it (its upgrades overlap alike).
	Overlap float64
	// ChurnOnly runs the seed's churn-only variant: the seed's own
	// workload (membership and connections change under traffic: joins,
	// leaves, moves, disconnects and reconnects) with no fault at all (no
	// fault plan, no per-operation draws, no upgrade), so that
	// timely-live-delivery judges every send with no fault excuse
	// (model.History.FaultFree). The header says it ("churn-only").
	ChurnOnly bool
	// Actions, when set, replaces the generated workload.
	Actions []Action
	// Faults, when non-nil, replaces the seed's timed fault plan whole
	// (PlanFaults, an upgrade's steps, overlaps, forgeries and steals): an
	// explicit plan, as the shrinker and a story give. Empty but non-nil:
	// no timed fault.
	Faults []Fault
	// Mix, when set, replaces the seed's drawn fault mix (DrawMix): its
	// per-operation rates (drops, duplicates, delays, Redis errors,
	// recv-breaks) are what each operation draws against; its counts
	// matter only to the plan that Faults replaces.
	Mix *FaultMix
	// FixedCost, when set, replaces the seed-drawn cost model.
	FixedCost *CostModel
	// CPU, when set, turns on the contended cost model (cpu.go): node CPUs
	// and Redis as resources, its own link latencies unless FixedCost is
	// set, and no strategy delays. nil keeps the swarm model.
	CPU *CPUModel
	// OnRelease, when set, is told of every op the scheduler releases.
	OnRelease func(op *Op, now time.Duration)
	// OnLeftovers, when set, is called inside the bubble with the finished
	// result when goroutines outlived teardown, before synctest fails the
	// bubble with its dump.
	OnLeftovers func(*Result)
	// OnEnd, when set, is called inside the bubble when the run's last
	// phase ended, before teardown and the checks (a heap profile).
	OnEnd func()
	// RecordNode, when set, adds a recorder to every node (see
	// ClusterConfig.RecordNode): the floor benchmarks'.
	RecordNode func(node string) (redis.Hook, []grpc.ServerOption)
}

// DefaultConfig is the runner's embedded default: 3 nodes, 12 users in 3
// rooms, 10 s of dense traffic with faults, then a 60 s drain.
func DefaultConfig() Config {
	return Config{
		Seed: 0x2a, Mode: system.ModeBulk, Nodes: 3,
		WorkloadConfig: WorkloadConfig{Users: 12, Rooms: 3, Duration: 10 * time.Second, Rate: 20, Churn: 1, Tick: 50 * time.Millisecond, RoomsPerUser: 2},
		Drain:          60 * time.Second, Scheduler: "random", PCTDepth: 3,
		Bounds:      DefaultBounds(),
		Executor:    system.ExecutorConfig{Core: 2, Max: 8, Queue: 16, KeepAlive: 10 * time.Second},
		OutboxSize:  64,
		SampleEvery: time.Second,
		Mixed:       0.25,
		Overlap:     0.5,
	}
}

// CalmVariant is cfg's mode-equivalence variant in mode: the same seed
// and sizes, membership still once traffic starts, and no faults, so that
// every relay mode must deliver every user the same messages.
func (c Config) CalmVariant(mode system.Mode) Config {
	c.Mode, c.Calm, c.Bounds = mode, true, NoFaults()
	return c
}

// ChurnVariant is cfg's churn-only variant in mode: the same seed, sizes
// and workload (membership and connections still change under traffic),
// with no fault at all and no upgrade, judged with no fault excuse. Its
// workload draws are the seed's: the variant moves no draw of the
// workload, only the faults are gone.
func (c Config) ChurnVariant(mode system.Mode) Config {
	c.Mode, c.ChurnOnly, c.Calm, c.Bounds, c.Upgrade = mode, true, false, NoFaults(), nil
	return c
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case !validMode(c.Mode):
		return fmt.Errorf("unknown mode %q (want single, bulk or stream)", c.Mode)
	case c.Nodes < 1 || c.Nodes > 64:
		return fmt.Errorf("nodes must be 1..64, got %d", c.Nodes)
	case len(c.Versions) > c.Nodes:
		return fmt.Errorf("%d protocol versions for %d nodes", len(c.Versions), c.Nodes)
	case c.Users < 1 || c.Users > 100000:
		return fmt.Errorf("users must be 1..100000, got %d", c.Users)
	case c.Rooms < 1:
		return fmt.Errorf("rooms must be at least 1, got %d", c.Rooms)
	case c.Overlap < 0 || c.Overlap > 1:
		return fmt.Errorf("overlap must be a probability in 0..1, got %v", c.Overlap)
	case c.Mixed < 0 || c.Mixed > 1:
		return fmt.Errorf("mixed must be a share in 0..1, got %v", c.Mixed)
	case c.Duration < 0 || c.Drain < 0:
		return fmt.Errorf("durations must not be negative")
	case c.Rate < 0 || c.Churn < 0:
		return fmt.Errorf("rates must not be negative")
	case c.ChurnOnly && c.Calm:
		return fmt.Errorf("churn-only and calm exclude each other (calm keeps membership still)")
	case c.ChurnOnly && c.Bounds != NoFaults():
		return fmt.Errorf("a churn-only run injects no fault (its fault bounds must be zero)")
	case c.ChurnOnly && c.Upgrade != nil:
		return fmt.Errorf("a churn-only run restarts no node: it takes no upgrade")
	case c.Tick <= 0:
		return fmt.Errorf("tick must be positive")
	case c.ChannelsPerPeer < 0 || c.ChannelsPerPeer > 16:
		return fmt.Errorf("channels per peer must be 0 (drawn) or 1..16, got %d", c.ChannelsPerPeer)
	case c.Executor.Core < 0 || c.Executor.Max < 1 || c.Executor.Core > c.Executor.Max || c.Executor.Queue < 0:
		return fmt.Errorf("bad pool sizes core=%d max=%d queue=%d", c.Executor.Core, c.Executor.Max, c.Executor.Queue)
	}
	switch c.Scheduler {
	case "random", "pct", "exhaustive", "first":
	default:
		return fmt.Errorf("unknown scheduler %q (want random, pct, exhaustive or first)", c.Scheduler)
	}
	return nil
}

func validMode(m system.Mode) bool {
	_, err := system.ParseMode(string(m))
	return err == nil
}

package sim

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

var runs atomic.Int64

// Run executes one simulation in its own bubble. t may be nil outside tests.
func Run(t *testing.T, cfg Config) *Result {
	res := &Result{Config: cfg}
	if err := cfg.Validate(); err != nil {
		res.Err = err
		return res
	}
	wall := time.Now()
	res.BubbleErr = Bubble(t, func(*testing.T) { runInBubble(cfg, res) })
	res.Wall = time.Since(wall)
	return res
}

func runInBubble(cfg Config, res *Result) {
	id := "run" + strconv.FormatInt(runs.Add(1), 10)
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("relaysim", id)))
	bounds := cfg.Bounds
	// A run with no fault at all (calm, churn-only, -faults=false) stays
	// so when wide.
	wide := cfg.Alphabet == AlphabetWide && bounds != NoFaults()
	if wide {
		wideBounds(&bounds)
	}
	res.Mix = DrawMix(cfg.Seed.Derive("faults"), bounds)
	if cfg.Mix != nil {
		res.Mix = *cfg.Mix
	}
	res.Cost = DrawCost(cfg.Seed.Derive("cost"))
	if cfg.CPU != nil {
		res.Cost = cfg.CPU.Links()
	}
	res.Channels = cfg.ChannelsPerPeer
	if res.Channels == 0 {
		res.Channels = DrawChannels(cfg.Seed.Derive("channels"))
	}
	res.StreamBacklog = cfg.StreamBacklog
	if res.StreamBacklog == 0 && cfg.Bounds != NoFaults() {
		res.StreamBacklog = DrawStreamBacklog(cfg.Seed.Derive("stream-backlog"))
	}
	if cfg.FixedCost != nil {
		res.Cost = *cfg.FixedCost
	}
	res.Limits = DrawLimits(cfg.Seed.Derive("limits"), cfg.Nodes, cfg.Mixed)
	if res.Limits != nil {
		res.Coverage.MixedConfigs = 1
		if len(cfg.startVersions()) == 0 {
			cfg.Versions = protocolsOf(res.Limits) // the run's copy
		}
	}
	trace := NewTrace(cfg.KeepTrace, 60)
	res.Trace = trace
	strategy := newStrategy(cfg)
	wl := Workload{Actions: cfg.Actions}
	if len(wl.Actions) == 0 {
		wc := cfg.WorkloadConfig
		wc.Nodes = cfg.Nodes
		wl = Generate(cfg.Seed.Derive("workload"), wc)
	}
	res.Actions = wl.Actions
	users := usersOf(wl.Actions)
	plan := cfg.Seed.Derive("faults").Derive("plan")
	res.Faults = PlanFaults(plan, res.Mix, cfg.Nodes, users, cfg.Tick*4, cfg.Duration)
	res.Faults = cfg.Upgrade.plan(res.Faults, cfg.Nodes, cfg.Duration)
	MarkOverlaps(cfg.Seed.Derive("overlap"), res.Faults, cfg.Overlap)
	res.Faults = withForgeries(res.Faults, PlanForgeries(plan, res.Mix.Forgeries, users, roomsOf(wl.Actions), cfg.Nodes, cfg.Tick*4, cfg.Duration))
	res.Faults = withForgeries(res.Faults, PlanSteals(plan, res.Mix.Steals, wl.Actions, cfg.Nodes, cfg.Tick*4, cfg.Duration))
	if cfg.Faults != nil {
		res.Faults = append([]Fault(nil), cfg.Faults...)
	}
	header(trace, cfg, res, strategy, len(wl.Actions))

	c, err := NewCluster(ClusterConfig{
		Seed: cfg.Seed, Mode: cfg.Mode, Nodes: cfg.Nodes, Executor: cfg.Executor, Alphabet: cfg.Alphabet, Versions: cfg.startVersions(), Limits: res.Limits,
		Node: func(nc *system.Config) {
			nc.OutboxSize, nc.ChannelsPerPeer = cfg.OutboxSize, res.Channels
			if wide {
				// A small replay page (16-64), so a flood's backlog
				// (and many plain replays) spans pages: the bound of
				// bounded-replay-memory within reach, as a drawn
				// StreamBacklog does for bounded-backlog.
				nc.ReplayPage = 16 + cfg.Seed.Derive("replay-page").Rand().IntN(49)
			}
			if res.StreamBacklog > 0 {
				nc.StreamBacklog = res.StreamBacklog
			}
			if cfg.StreamLinger > 0 {
				nc.StreamLinger = cfg.StreamLinger
			}
		},
		Cost: res.Cost, Mix: res.Mix, Strategy: strategy, Trace: trace, RunID: id, CPU: cfg.CPU, History: cfg.History,
		RecordNode: cfg.RecordNode,
	})
	if err != nil {
		res.Err = fmt.Errorf("start cluster: %w", err)
		if c != nil {
			res.finish(c, id)
		}
		return
	}
	c.Sched.ByArrival, c.Sched.Ungated = cfg.ByArrival, cfg.Ungated
	c.Sched.OnRelease = cfg.OnRelease
	c.SetBounds(res.Cost, maxDelayOf(strategy))

	for _, a := range wl.Actions {
		c.Do(a)
	}
	c.rec.reserveEvents(len(wl.Actions))
	c.floods.end = cfg.Duration
	c.StartChaos(res.Faults)
	c.runSampled(cfg.Duration, cfg.SampleEvery)
	if err := c.Drain(cfg.Drain, cfg.SampleEvery); err != nil {
		res.Err = err
	}
	res.finish(c, id)
}

func (res *Result) finish(c *Cluster, id string) {
	final, err := c.Final()
	if err != nil && res.Err == nil {
		res.Err = err
	}
	res.Virtual = c.Now()
	res.Steps, res.Delays = c.Sched.Steps, c.Sched.Delays
	if c.Sched.Resources != nil {
		res.Busy = c.Sched.Resources.Busy()
	}
	res.Peaks = c.Peaks()
	res.Stats = c.Stats
	res.Coverage = c.coverage.snapshot()
	res.Coverage.MixedConfigs = btoi(res.Limits != nil)
	res.Coverage.OverlappingIncarnations = c.Stats.Overlaps
	// The probes the run reached, before teardown stops the nodes.
	res.Probes = c.probes.snapshot()
	for _, k := range c.Sched.Collisions {
		res.Err = fmt.Errorf("gate key parked twice at once (harness bug): %s", k)
	}
	res.TraceHash = c.Trace.Hash()
	if res.Config.OnEnd != nil {
		res.Config.OnEnd()
	}
	// The run is over: what it had in flight (queued deliveries, buffers,
	// parked operations) is garbage now, but the collector would let the
	// heap grow to twice what it last marked, while the run was busiest,
	// before it looked again. Teardown and the checks allocate on top of
	// that; in a run big enough to spill its delivery log, collecting here
	// (and once more before the checks) bounds them by what they really
	// keep. A small run's heap is small and a collection costs ~7 ms of
	// its CPU, so it is left alone. No trace changes either way: the
	// collector is not in the simulation's schedule.
	big := c.History().Deliveries.Spilled() > 0
	if big {
		runtime.GC()
	}
	c.Close()
	synctest.Wait() // let exiting goroutines finish: what is left is blocked for good
	final.LeftoverGoroutines = leftovers(id)
	c.rec.bounds(func(h *model.History) {
		h.Links, h.LogReads, h.Registry = c.backlog.records(), c.logReads.records(), c.registry.records()
	})
	hist, err := c.rec.finish(final)
	if err != nil && res.Err == nil {
		res.Err = fmt.Errorf("write history: %w", err)
	}
	res.History = hist
	if c.Sched.Resources != nil {
		// Under a contended cost model an op on the live path may also
		// wait for a core; every hop at the longest wait any op met
		// (the harness's own booking, not the relay's word).
		hist.LiveBound += ContendedLiveBound(c.Sched.Resources.MaxWait())
		if hist.ItemHop > 0 {
			hist.ItemHop += c.Sched.Resources.MaxWait()
		}
		res.MaxWait = c.Sched.Resources.MaxWait()
	}
	if big {
		runtime.GC()
	}
	// No fault injected nor recorded (a churn-only, calm or fault-free
	// run; the relay's own stream refusals under mixed limits are no
	// fault): timely-live-delivery judges every send with no excuse.
	hist.FaultFree = c.Stats.FaultsInjected == 0 && OnlyRefusals(hist.Faults)
	res.Violations = model.Check(hist)
	res.Coverage.TrafficAfterRecovery = model.StrictSends(hist)
	res.Live, res.FromLog = model.DeliveryCounts(hist)
	res.Coverage.countNames(hist)
	if len(final.LeftoverGoroutines) > 0 && res.Config.OnLeftovers != nil {
		// synctest is about to fail the bubble with a dump of every
		// goroutine; give the caller the readable report first.
		res.Config.OnLeftovers(res)
	}
}

// Close tears the cluster down: the scheduler stops gating, then clients,
// nodes and miniredis close in that order. Nothing after this reaches the
// trace.
func (c *Cluster) Close() {
	c.Trace.Freeze()
	c.faults.on = false
	if c.stopChaos != nil {
		close(c.stopChaos)
		c.stopChaos = nil
	}
	c.Sched.PassThrough()
	for _, cl := range c.userList() {
		cl.close()
	}
	for _, sn := range c.nodes {
		if sn.up {
			sn.up = false
			sn.n.Stop(context.Background())
		}
	}
	c.stopLingering()
	c.joinKills()
	c.Redis.Close()
}

// OnlyRefusals reports whether every recorded fault is a receiver's
// refusal of a relay stream (model.FaultStreamRefused): the relay's own
// doing under mixed limits, which the harness did not inject.
func OnlyRefusals(fs []model.Fault) bool {
	for _, f := range fs {
		if f.Kind != model.FaultStreamRefused {
			return false
		}
	}
	return true
}

func newStrategy(cfg Config) Strategy {
	switch {
	case cfg.Exhaustive != nil:
		return cfg.Exhaustive
	case cfg.Scheduler == "pct":
		return dst.NewPCT(cfg.Seed.Derive("scheduler"), cfg.PCTDepth, 20000, 50*time.Millisecond)
	case cfg.Scheduler == "exhaustive":
		return &Exhaustive{Bound: 2}
	case cfg.Scheduler == "first":
		return dst.First{}
	}
	ch := cfg.Chooser
	if ch == nil {
		ch = cfg.Seed.Derive("scheduler").Rand()
	}
	return &Random{C: ch, DelayP: 0.01, MaxDelay: 20 * time.Millisecond}
}

// DrawChannels draws a seed's gRPC connections per peer, 1 to 4.
func DrawChannels(seed Seed) int { return 1 + seed.Rand().IntN(4) }

// DrawStreamBacklog draws a faulted seed's link backlog bound
// (system.Config.StreamBacklog): half the seeds keep the default (0), the
// others run with a bound of 24 to 96 items, small enough that a link
// whose acks fail for a few seconds reaches it within a run (the
// bounded-backlog property judges every link against it), and above what
// a healthy link holds in one linger at the default workload's rate.
func DrawStreamBacklog(seed Seed) int {
	r := seed.Rand()
	small, n := r.IntN(2) == 1, 24+r.IntN(73)
	if !small {
		return 0
	}
	return n
}

func usersOf(as []Action) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range as {
		if !seen[a.User] {
			seen[a.User] = true
			out = append(out, a.User)
		}
	}
	return sortedCopy(out)
}

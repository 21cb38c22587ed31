package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
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
	Scheduler string // random | pct | exhaustive
	PCTDepth  int
	Bounds    FaultBounds
	Executor  system.ExecutorConfig
	// OutboxSize bounds each client's pending deliveries on a node.
	OutboxSize int
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
	// Actions, when set, replaces the generated workload.
	Actions []Action
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
	}
}

// CalmVariant is cfg's mode-equivalence variant in mode: the same seed
// and sizes, membership still once traffic starts, and no faults, so that
// every relay mode must deliver every user the same messages.
func (c Config) CalmVariant(mode system.Mode) Config {
	c.Mode, c.Calm, c.Bounds = mode, true, NoFaults()
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
	case c.Duration < 0 || c.Drain < 0:
		return fmt.Errorf("durations must not be negative")
	case c.Rate < 0 || c.Churn < 0:
		return fmt.Errorf("rates must not be negative")
	case c.Tick <= 0:
		return fmt.Errorf("tick must be positive")
	case c.ChannelsPerPeer < 0 || c.ChannelsPerPeer > 16:
		return fmt.Errorf("channels per peer must be 0 (drawn) or 1..16, got %d", c.ChannelsPerPeer)
	case c.Executor.Core < 0 || c.Executor.Max < 1 || c.Executor.Core > c.Executor.Max || c.Executor.Queue < 0:
		return fmt.Errorf("bad pool sizes core=%d max=%d queue=%d", c.Executor.Core, c.Executor.Max, c.Executor.Queue)
	}
	switch c.Scheduler {
	case "random", "pct", "exhaustive":
	default:
		return fmt.Errorf("unknown scheduler %q (want random, pct or exhaustive)", c.Scheduler)
	}
	return nil
}

func validMode(m system.Mode) bool {
	_, err := system.ParseMode(string(m))
	return err == nil
}

// Result is what a run produced.
type Result struct {
	Config     Config
	Mix        FaultMix
	Cost       CostModel
	Channels   int // gRPC connections per peer (drawn or set)
	Faults     []Fault
	History    *model.History
	Violations []model.Violation
	TraceHash  string
	Trace      *Trace
	Stats      Stats
	Virtual    time.Duration
	Wall       time.Duration
	Steps      int
	Delays     int
	Peaks      []int
	// Live and FromLog count the deliveries pushed live and those replayed
	// or gap-filled from the room log.
	Live, FromLog int
	// Busy is the work booked per resource (CPU model only).
	Busy []ResourceBusy
	// MaxWait is the longest any op waited for a core (CPU model only);
	// the live bound grew by ContendedLiveBound of it.
	MaxWait time.Duration
	// BubbleErr is set when the bubble itself failed (a deadlock, or
	// goroutines left behind).
	BubbleErr error
	Err       error
	notes     []string // for the banner (see WholeTrace)
}

// Failed reports whether the run violated a property or did not complete.
func (r *Result) Failed() bool {
	return len(r.Violations) > 0 || r.BubbleErr != nil || r.Err != nil
}

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
	res.Mix = DrawMix(cfg.Seed.Derive("faults"), cfg.Bounds)
	res.Cost = DrawCost(cfg.Seed.Derive("cost"))
	if cfg.CPU != nil {
		res.Cost = cfg.CPU.Links()
	}
	res.Channels = cfg.ChannelsPerPeer
	if res.Channels == 0 {
		res.Channels = DrawChannels(cfg.Seed.Derive("channels"))
	}
	if cfg.FixedCost != nil {
		res.Cost = *cfg.FixedCost
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
	users := usersOf(wl.Actions)
	plan := cfg.Seed.Derive("faults").Derive("plan")
	res.Faults = PlanFaults(plan, res.Mix, cfg.Nodes, users, cfg.Tick*4, cfg.Duration)
	res.Faults = cfg.Upgrade.plan(res.Faults, cfg.Nodes, cfg.Duration)
	res.Faults = withForgeries(res.Faults, PlanForgeries(plan, res.Mix.Forgeries, users, roomsOf(wl.Actions), cfg.Tick*4, cfg.Duration))
	header(trace, cfg, res, strategy, len(wl.Actions))

	c, err := NewCluster(ClusterConfig{
		Seed: cfg.Seed, Mode: cfg.Mode, Nodes: cfg.Nodes, Executor: cfg.Executor, Versions: cfg.startVersions(),
		Node: func(nc *system.Config) { nc.OutboxSize, nc.ChannelsPerPeer = cfg.OutboxSize, res.Channels },
		Cost: res.Cost, Mix: res.Mix, Strategy: strategy, Trace: trace, RunID: id, CPU: cfg.CPU, History: cfg.History,
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
	c.StartChaos(res.Faults)
	c.runSampled(cfg.Duration, cfg.SampleEvery)
	if err := c.Liveness(); err != nil {
		res.Err = err
	}
	c.runSampled(c.Now()+cfg.Drain, cfg.SampleEvery)
	c.Sched.RunFor(cfg.Executor.KeepAlive + time.Second)
	c.Sample(true, true)
	res.finish(c, id)
}

// Upgrade is a rolling upgrade from one relay protocol version to another.
type Upgrade struct{ From, To int }

// ParseUpgrade reads "v1:v3".
func ParseUpgrade(s string) (*Upgrade, error) {
	from, to, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("bad upgrade %q (want FROM:TO, e.g. v1:v3)", s)
	}
	f, err := system.ParseProtocol(from)
	if err != nil {
		return nil, fmt.Errorf("bad upgrade %q: %w", s, err)
	}
	t, err := system.ParseProtocol(to)
	if err != nil {
		return nil, fmt.Errorf("bad upgrade %q: %w", s, err)
	}
	return &Upgrade{From: f, To: t}, nil
}

func (u *Upgrade) String() string { return fmt.Sprintf("v%d:v%d", u.From, u.To) }

// ParseVersions reads "v1,v2,v3" (one per node, from n1).
func ParseVersions(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := system.ParseProtocol(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// startVersions is what each node starts with: Versions, or the upgrade's
// From for every node.
func (c Config) startVersions() []int {
	if c.Upgrade == nil {
		return c.Versions
	}
	out := make([]int, c.Nodes)
	for i := range out {
		out[i] = c.Upgrade.From
	}
	return out
}

// plan adds the upgrade's steps to a fault plan: node i is restarted with
// To at (i+1)/(nodes+1) of the load phase.
func (u *Upgrade) plan(fs []Fault, nodes int, load time.Duration) []Fault {
	if u == nil {
		return fs
	}
	for i := range nodes {
		at := (load * time.Duration(i+1) / time.Duration(nodes+1)).Truncate(time.Millisecond)
		fs = append(fs, Fault{At: at, Kind: model.FaultUpgrade, Node: i, Protocol: u.To})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// closeBound is how soon a node must end the stream of a client that
// closed it: the client's cancel reaches the node with the next frame, and
// the handler only has to notice it (a few gated steps).
const closeBound = time.Second

// SetBounds sets the bounds the checkers judge the run by: the keep-alive
// bound of a vanished client's stream, the live-delivery bound and the
// recovery times of faults (from the cost model and the node config), and
// the per-node goroutine bound.
func (c *Cluster) SetBounds(cost CostModel, maxDelay time.Duration) {
	nc := system.DefaultConfig()
	if c.cfg.Node != nil {
		c.cfg.Node(&nc)
	}
	c.rec.bounds(func(h *model.History) {
		h.KeepAliveBound = nc.StreamKeepAlive + nc.StreamKeepAliveTimeout + 5*time.Second
		h.CloseBound = closeBound
		h.LiveBound = LiveBound(cost, maxDelay)
		h.Recovery = Recovery(nc)
		h.GoroutineBound = GoroutineBound
		if c.cfg.Mode == system.ModeStream {
			h.GoroutineBound = StreamGoroutineBound
		}
	})
}

func maxDelayOf(s Strategy) time.Duration {
	switch s := s.(type) {
	case *Random:
		return s.MaxDelay
	case *dst.PCT:
		return s.MaxDelay
	case *Exhaustive:
		return s.Delay
	}
	return 0
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
		res.MaxWait = c.Sched.Resources.MaxWait()
	}
	if big {
		runtime.GC()
	}
	res.Violations = model.Check(hist)
	res.Live, res.FromLog = model.DeliveryCounts(hist)
	if len(final.LeftoverGoroutines) > 0 && res.Config.OnLeftovers != nil {
		// synctest is about to fail the bubble with a dump of every
		// goroutine; give the caller the readable report first.
		res.Config.OnLeftovers(res)
	}
}

// runSampled drives the bubble until virtual time end, sampling at every
// quiescent point `every` apart, goroutines included.
func (c *Cluster) runSampled(end, every time.Duration) {
	for c.Now() < end {
		c.Sched.RunUntil(min(end, c.Now()+every))
		c.Sample(false, true)
	}
}

// GoroutineBound is a node's goroutine budget at a sample, a formula of
// what the node holds, never of messages: a fixed set (server, refresh,
// health), its workers (at most max pool), a few per transport connection
// accepted or dialled (reader, writer, keep-alive, one call in flight from
// a client), a few per client stream (handler, session sync loop, pump), a
// few per channel to a peer (each gRPC client connection's resolver and
// balancer, for every other node: channels to a peer that is down stay
// until the node notices), and one relay handler per task running on a
// peer's workers (each holds at most one relay call). Fitted on seeds 1-24
// of the default run in both modes (10,110 samples, 1-4 channels per
// peer): the count never came within 9 of the bound.
func GoroutineBound(s model.Sample) int {
	return goroutinesFixed + s.Max + goroutinesPerConn*(s.InConns+s.OutConns) + goroutinesPerStream*s.OpenStreams +
		goroutinesPerChannel*max(s.Peers, s.LivePeers)*s.ChannelsPerPeer + s.PeerRunning
}

// StreamGoroutineBound is GoroutineBound in stream mode, where each channel
// to a peer also carries a relay stream link both ways: the sender's
// writer and its stream's context watcher, the receiver's handler and its
// own. A link that was replaced (its peer restarted) may still be handing
// over or winding down while its successor runs: twice that.
func StreamGoroutineBound(s model.Sample) int {
	return GoroutineBound(s) + 2*goroutinesPerLink*max(s.Peers, s.LivePeers)*s.ChannelsPerPeer
}

const (
	goroutinesFixed      = 32
	goroutinesPerConn    = 3
	goroutinesPerStream  = 3
	goroutinesPerChannel = 3
	goroutinesPerLink    = 4
)

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
	c.joinKills()
	c.Redis.Close()
}

func newStrategy(cfg Config) Strategy {
	switch {
	case cfg.Exhaustive != nil:
		return cfg.Exhaustive
	case cfg.Scheduler == "pct":
		return dst.NewPCT(cfg.Seed.Derive("scheduler"), cfg.PCTDepth, 20000, 50*time.Millisecond)
	case cfg.Scheduler == "exhaustive":
		return &Exhaustive{Bound: 2}
	}
	ch := cfg.Chooser
	if ch == nil {
		ch = cfg.Seed.Derive("scheduler").Rand()
	}
	return &Random{C: ch, DelayP: 0.01, MaxDelay: 20 * time.Millisecond}
}

func header(t *Trace, cfg Config, res *Result, s Strategy, actions int) {
	t.Header("relaysim seed=%s mode=%s scheduler=%s", cfg.Seed, cfg.Mode, s.Name())
	t.Header("cluster nodes=%d users=%d rooms=%d pool=%d/%d/%d keepalive=%v channels=%d", cfg.Nodes, cfg.Users, cfg.Rooms,
		cfg.Executor.Core, cfg.Executor.Max, cfg.Executor.Queue, cfg.Executor.KeepAlive, res.Channels)
	t.Header("workload duration=%v drain=%v rate=%.1f/s churn=%.1f/s tick=%v actions=%d%s", cfg.Duration, cfg.Drain, cfg.Rate, cfg.Churn, cfg.Tick, actions,
		map[bool]string{true: " calm"}[cfg.Calm])
	if v := cfg.startVersions(); len(v) > 0 {
		upgrade := ""
		if cfg.Upgrade != nil {
			upgrade = " upgrade=" + cfg.Upgrade.String()
		}
		t.Header("protocols %s%s", formatVersions(v), upgrade)
	}
	t.Header("faults %s", res.Mix)
	for _, f := range res.Faults {
		t.Header("fault at %s: %s", FormatTime(f.At), f)
	}
	t.Header("cost %s", res.Cost)
	if cfg.CPU != nil {
		t.Header("cpu %s", cfg.CPU)
	}
}

func formatVersions(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("n%d=v%d", i+1, v)
	}
	return strings.Join(parts, " ")
}

// DrawChannels draws a seed's gRPC connections per peer, 1 to 4.
func DrawChannels(seed Seed) int { return 1 + seed.Rand().IntN(4) }

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

// leftovers describes the run's goroutines still alive after teardown
// (other than the caller).
func leftovers(id string) []string {
	n, stacks := goroutinesOf(id)
	if n <= 1 {
		return nil
	}
	return stacks
}

func goroutinesOf(id string) (int, []string) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return 0, nil
	}
	want := fmt.Sprintf(`"relaysim":"%s"`, id)
	total := 0
	var stacks []string
	text := buf.String()
	if _, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(text, "goroutine profile:") {
		text = rest // the header line, not a record
	}
	for _, rec := range strings.Split(text, "\n\n") {
		if !strings.Contains(rec, want) {
			continue
		}
		lines := strings.Split(rec, "\n")
		n, _ := strconv.Atoi(strings.Fields(lines[0] + " 0")[0])
		total += n
		if fn := firstFunc(lines); fn != "" && !strings.Contains(fn, "goroutinesOf") && !strings.Contains(rec, "sim.leftovers") {
			stacks = append(stacks, fmt.Sprintf("%d x %s", n, fn))
		}
	}
	return total, stacks
}

func firstFunc(lines []string) string {
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "#" && strings.HasPrefix(f[1], "0x") && len(f) >= 3 {
			if !strings.HasPrefix(f[2], "runtime.") && !strings.HasPrefix(f[2], "internal/") && !strings.HasPrefix(f[2], "sync.") {
				return f[2]
			}
		}
	}
	return ""
}

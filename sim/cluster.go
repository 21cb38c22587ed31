package sim

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/sim/dst/memnet"
	"github.com/relaysim/relaysim/system"
)

// ClusterConfig is what a cluster is built from.
type ClusterConfig struct {
	// NoRecoveryTraffic keeps the liveness phase from sending (Drain's
	// strictly judged bursts, afterRecovery).
	NoRecoveryTraffic bool
	Seed              Seed
	Mode              system.Mode
	Nodes             int
	Executor          system.ExecutorConfig
	// Alphabet AlphabetWide draws the node ids from WideNodeIDs and tries
	// once to start a node with a malformed id (tryBadNodeID).
	Alphabet Alphabet
	// Node tunes every node's config (ids, addresses and mode are set by
	// the cluster); nil keeps the defaults.
	Node     func(*system.Config)
	Cost     CostModel
	Mix      FaultMix
	Strategy Strategy
	Trace    *Trace
	// RunID labels every goroutine of the cluster (pprof label "relaysim"),
	// so goroutines are counted per run and per node; "" picks one.
	RunID string
	// CPU, when set, makes ops contend for node CPUs and Redis (cpu.go).
	CPU *CPUModel
	// Versions is the relay protocol version each node starts with (index
	// i for node i); missing or 0 means the latest.
	Versions []int
	// Limits is each node's limits in a mixed cluster (index i for node
	// i; zero fields keep the defaults). The oracle is told every
	// incarnation's limits (model.History.Limits).
	Limits []NodeLimits
	// Legacy is the legacy behaviours each node starts with (index i for
	// node i; missing is none): an unfixed build beside fixed ones during
	// a rolling upgrade (docs/protocol-rules.md). SetLegacy changes a
	// node's for its next incarnation.
	Legacy []system.Legacy
	// History, when set, receives the history as it is recorded.
	History io.Writer
	// Story keeps what the trace tells as typed events (Cluster.Story):
	// the scenario files render their output from them.
	Story bool
	// Explorer, when set, runs the cluster under the model checker: every
	// op's latency is zero (ops not causally ordered are co-enabled), the
	// explorer makes the choices while armed (ArmExplore), and the gates
	// tell it footprints and the faults they can carry out (exploring.go).
	// Strategy should be dst.First{}: it picks outside the armed window.
	Explorer *dst.Explorer
	// RecordNode, when set, adds a recorder to every node incarnation: a
	// go-redis hook inside the simulation's own (it sees the commands
	// that reach miniredis) and gRPC server options (a stats handler sees
	// every call and message). Only the floor benchmarks set it
	// (sim/floorbench); nil adds nothing.
	RecordNode func(node string) (redis.Hook, []grpc.ServerOption)
}

// Cluster is a relay cluster inside one bubble: nodes over bufconn, one
// miniredis, simulated clients, the scheduler, and the recorded history.
type Cluster struct {
	cfg   ClusterConfig
	Sched *dst.Scheduler
	Trace *Trace
	Net   *memnet.Network
	Redis *miniredis.Miniredis
	nodes []*simNode
	users map[string]*Client
	// rec records the history (recorder.go).
	rec    *recorder
	faults faultState
	Stats  Stats
	// FinalCountsOnly counts goroutines only at the drain's last sample,
	// not at those on the way (each count unwinds every goroutine's stack:
	// the largest cost of a model checker's schedule, whose drain is short).
	FinalCountsOnly bool
	// coverage counts what the run's Coverage reports (coverage.go).
	coverage coverage
	// probes counts the code probes the nodes hit (probes.go).
	probes *probeCounts
	// timers tracks the relay's timers a story's work waits on, while
	// exploring (exploretimers.go; nil otherwise).
	timers *relayTimers
	seeds  struct{ faults, cost Seed }
	// stopChaos ends the fault injector (liveness phase).
	stopChaos chan struct{}
	// kills are the Kill calls of crashed incarnations, closed when one
	// returns: after teardown's PassThrough (see cut).
	kills []chan struct{}
	// runID and labels: every node incarnation's goroutines carry the run's
	// label and a "node" label with the incarnation's tag.
	runID  string
	labels context.Context
	// channels is the nodes' channels per peer.
	channels int
	// userSecret keys the users' credentials (derived from the seed).
	userSecret string
	// breaks counts each relay stream link's breaks since its last ack
	// (streamhooks.go); relayAttempts is the nodes' RelayAttempts.
	breaks        linkBreaks
	relayAttempts int
	relayTimeout  time.Duration
	// openStreams are the relay streams open for recv-break
	// (streamhooks.go); forcedCuts the breaks the rapid machine asked for
	// at the next stream.deliver gate (BreakNextDelivery).
	openStreams openStreams
	forcedCuts  int
	// backlog counts the stream links' backlogs from the wire (backlog.go).
	backlog backlogCounter
	// logReads, registry: room-log reads, registry entries (logreads.go, registry.go).
	logReads logReadCounter
	registry registryWatch
	// giveUpBudget is how long a link must have been broken before its
	// writer may give its items up (GiveUpBudget of the nodes' config).
	giveUpBudget time.Duration
	// blipSends numbers the sends blips made (chaos.go).
	blipSends int
	// rewindSends numbers the sends Redis rewinds made (panel.go);
	// rewinding is 1 + the node of the rewind whose snapshot is not yet
	// restored (0: none).
	rewindSends, rewinding int
	// snapshotsSkipped counts the Redis snapshots not taken because
	// another was held (panel.go): their restores are skipped in turn.
	snapshotsSkipped int
	// floods are the floods' state (flood.go); lingering are the
	// superseded incarnations still alive (supersede.go).
	floods    floodState
	lingering []*lingering
	// stallBursts numbers the stalls that sent a burst (stall.go).
	stallBursts int
	// footprintUnknown counts the explored ops taken to touch everything
	// (exploring.go), by reason.
	footprintMu      sync.Mutex
	footprintUnknown map[string]int
	// rebootArmed: the explored window is open and its search may reboot
	// crashed nodes (a "reboot" budget): a crash inside it parks a lazy
	// reboot op for its node (exploring.go).
	rebootArmed bool
	// fine: the ops ArmExplore's window parks get fine footprints inside
	// their node (exploring.go); set by ArmExplore.
	fine bool
	// onePerNode: every node has had one process only in this run, none
	// superseded one still alive, and the window cannot reboot one; so a
	// registry entry names the one process its node ever had, and a
	// registry read installs a peer without replacing one (finenode.go).
	// Set by ArmExplore.
	onePerNode bool
}

// Stats counts what a run did.
type Stats struct {
	Sends, SendsOK, Deliveries, Relays, RelayErrors, FaultsInjected int
	Crashes, Restarts                                               int
	// Overlaps counts restarts and upgrades whose new incarnation started
	// before the old one had stopped.
	Overlaps int
}

type simNode struct {
	// tag names the current incarnation's connections: a crashed
	// incarnation may still be closing its own when the next one starts.
	tag         string
	incarnation int
	idx         int
	id          string
	n           *system.Node
	hooks       *nodeHooks
	up          bool
	// starting is set while a start is in progress (the chaos injector and
	// the liveness phase may both try to bring a node back).
	starting    bool
	peak        int
	peakRunning int
	epoch       uint64
	// protocol is the relay protocol version the node runs (and restarts
	// with, until an upgrade changes it); stopping is set while an upgrade
	// stops the running incarnation.
	protocol int
	stopping bool
	// legacy is what the node's incarnations run with (Config.Legacy),
	// until SetLegacy changes it.
	legacy system.Legacy
}

// NewCluster starts cfg.Nodes nodes. Call it inside a bubble, from the
// goroutine that will drive the scheduler.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	c := &Cluster{cfg: cfg, Trace: cfg.Trace, Net: memnet.NewNetwork(), users: map[string]*Client{}, runID: cfg.RunID,
		rec: newRecorder(cfg.Trace, newHistoryOut(cfg.History), cfg.Mode), probes: newProbeCounts()}
	if cfg.Explorer != nil {
		c.timers = newRelayTimers()
	}
	if c.runID == "" {
		c.runID = "cluster" + strconv.FormatInt(runs.Add(1), 10)
	}
	c.labels = pprof.WithLabels(context.Background(), pprof.Labels("relaysim", c.runID))
	pprof.SetGoroutineLabels(c.labels)
	c.seeds.faults = cfg.Seed.Derive("faults")
	c.seeds.cost = cfg.Seed.Derive("cost")
	c.userSecret = "relaysim-users-" + cfg.Seed.Derive("user-secret").String()
	cost := cfg.Cost.WithSeed(c.seeds.cost)
	latency := cost.Latency
	if cfg.Explorer != nil {
		latency = nil
	}
	c.Sched = dst.NewScheduler(cfg.Strategy, c.Trace, latency)
	c.Sched.Explorer = cfg.Explorer
	if cfg.CPU != nil {
		c.Sched.Resources = dst.NewResources(cfg.CPU.Cost)
	}
	c.faults.init(cfg.Mix)
	c.Redis = miniredis.NewMiniRedis()
	c.Redis.ClockTTL(true)
	var wideIDs []string
	if cfg.Alphabet == AlphabetWide {
		wideIDs = WideNodeIDs(cfg.Seed.Derive("node-ids").Rand(), cfg.Nodes)
	}
	for i := range cfg.Nodes {
		sn := &simNode{idx: i, id: fmt.Sprintf("n%d", i+1), protocol: system.ProtocolLatest}
		if wideIDs != nil {
			sn.id = wideIDs[i]
		}
		if i < len(cfg.Versions) && cfg.Versions[i] != 0 {
			sn.protocol = cfg.Versions[i]
		}
		if i < len(cfg.Legacy) {
			sn.legacy = cfg.Legacy[i]
		}
		c.nodes = append(c.nodes, sn)
	}
	// The cluster comes up before the run starts: no fault is drawn while
	// the nodes register (a drawn Redis error would fail the start itself,
	// which is set-up, not the system under test). Restarts during the run
	// do meet faults; a failed one leaves the node down.
	c.faults.on = false
	for _, sn := range c.nodes {
		if err := c.drive(func() error { return c.startNode(sn) }); err != nil {
			return c, fmt.Errorf("start %s: %w", sn.id, err)
		}
	}
	if cfg.Alphabet == AlphabetWide {
		c.tryBadNodeID()
	}
	c.faults.on = true
	return c, nil
}

// drive runs f in its own goroutine while the driver keeps scheduling, and
// returns f's result: the driver must never run gated code itself.
func (c *Cluster) drive(f func() error) error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = f()
	}()
	if !c.Sched.Await(done, time.Hour) {
		return fmt.Errorf("operation did not finish within an hour of virtual time")
	}
	return err
}

// Now is the virtual time since the cluster started.
func (c *Cluster) Now() time.Duration { return c.Sched.Now() }

// History returns the history recorded so far.
func (c *Cluster) History() *model.History { return c.rec.history() }

// NodeIDs lists the node ids.
func (c *Cluster) NodeIDs() []string {
	out := make([]string, len(c.nodes))
	for i, sn := range c.nodes {
		out[i] = sn.id
	}
	return out
}

// Node returns node i's system.Node (nil while it is down).
func (c *Cluster) Node(i int) *system.Node {
	if !c.nodes[i].up {
		return nil
	}
	return c.nodes[i].n
}

// startNode starts a new incarnation of sn. Every goroutine the
// incarnation starts inherits its pprof labels (run and node tag), so the
// samples count them per node from outside the relay.
func (c *Cluster) startNode(sn *simNode) (err error) {
	sn.incarnation++
	sn.tag = fmt.Sprintf("%s@%d", sn.id, sn.incarnation)
	pprof.Do(c.labels, pprof.Labels("node", sn.tag), func(context.Context) { err = c.startIncarnation(sn) })
	return err
}

func (c *Cluster) startIncarnation(sn *simNode) error {
	sn.starting = true
	defer func() { sn.starting = false }()
	cfg := system.DefaultConfig()
	if c.cfg.Node != nil {
		c.cfg.Node(&cfg)
	}
	cfg.NodeID, cfg.Advertise, cfg.Mode, cfg.Protocol = sn.id, sn.id, c.cfg.Mode, sn.protocol
	if sn.idx < len(c.cfg.Limits) {
		l := c.cfg.Limits[sn.idx]
		setDefault(&cfg.MaxPayload, l.MaxPayload)
		setDefault(&cfg.MaxRecipients, l.MaxRecipients)
	}
	cfg.Legacy = sn.legacy
	cfg.ClusterToken = clusterToken
	cfg.UserSecret = c.userSecret
	if c.cfg.Executor.Max > 0 {
		cfg.Executor = c.cfg.Executor
	}
	c.channels, c.relayAttempts, c.giveUpBudget = cfg.ChannelsPerPeer, cfg.RelayAttempts, GiveUpBudget(cfg)
	c.relayTimeout = cfg.RelayTimeout
	// The bounds bounded-backlog judges the node's links by: the
	// configuration the harness starts it with (a zero takes the default).
	d := system.DefaultConfig()
	c.backlog.configured(sn.id, cmp.Or(cfg.StreamBacklog, d.StreamBacklog), cmp.Or(cfg.RelayAttempts, d.RelayAttempts))
	c.logReads.configured(sn.id, cmp.Or(cfg.ReplayPage, d.ReplayPage))
	h := &nodeHooks{c: c, node: sn.id}
	sn.hooks = h
	redisHooks, serverOpts := []redis.Hook{h}, h.serverOptions()
	if c.cfg.RecordNode != nil {
		rh, so := c.cfg.RecordNode(sn.id)
		redisHooks, serverOpts = append(redisHooks, rh), append(serverOpts, so...)
	}
	n, err := system.New(cfg, system.Deps{
		Listener:      c.Net.Listen(sn.id),
		Dial:          c.Net.Dialer(sn.tag),
		Redis:         c.redisOptions(),
		RedisHooks:    redisHooks,
		ServerOptions: serverOpts,
		DialOptions:   h.dialOptions(),
		TargetScheme:  "passthrough",
		Hooks:         h,
		Probes:        c.prober(),
	})
	if err != nil {
		return err
	}
	// Like an orchestrator, retry a start that failed on a Redis fault.
	for try := 1; ; try++ {
		err = n.Start(context.Background())
		if err == nil {
			break
		}
		c.tell(sn.id, NodeStartFailed{Try: try, Err: err})
		if try == 5 {
			n.Kill()
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
	sn.n, sn.up, sn.epoch = n, true, n.Epoch()
	c.tell(sn.id, NodeUp{Epoch: sn.epoch, Mode: c.cfg.Mode, Protocol: sn.protocol, RelaysIn: n.Mode(), Legacy: sn.legacy})
	c.rec.version(model.Version{Node: sn.id, From: c.Now(), Protocol: sn.protocol})
	c.rec.limits(model.Limits{Node: sn.id, From: c.Now(), MaxPayload: cfg.MaxPayload, MaxRecipients: cfg.MaxRecipients})
	c.rec.endFault(model.FaultCrash, sn.id, c.Now())
	c.rec.endFault(model.FaultUpgrade, sn.id, c.Now())
	return nil
}

// redisOptions connects go-redis to the in-memory miniredis: no DNS (an IP
// literal that is never dialled), no maintenance notifications, no identity
// handshake, no retries (the scheduler must see every attempt), explicit
// pool size.
func (c *Cluster) redisOptions() *redis.Options { return RedisOptions(c.Redis) }

// RedisOptions are the go-redis options of a node of the simulation,
// connected to m (see Cluster.redisOptions).
func RedisOptions(m *miniredis.Miniredis) *redis.Options {
	return &redis.Options{
		Addr:            "127.0.0.1:6379",
		Dialer:          func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
		DisableIdentity: true,
		MaxRetries:      -1,
		PoolSize:        256,
		Protocol:        2,
		ReadTimeout:     -1,
		WriteTimeout:    -1,
	}
}

func (c *Cluster) notePeak(sn *simNode) {
	if sn.n != nil {
		sn.peak = max(sn.peak, sn.n.Metrics().Executor.Peak)
	}
}

// Peaks returns each node's peak pool size over the run.
func (c *Cluster) Peaks() []int {
	out := make([]int, len(c.nodes))
	for i, sn := range c.nodes {
		c.notePeak(sn)
		out[i] = sn.peak
	}
	return out
}

// Sample records every live node at a quiescent point (the driver calls it
// between scheduler runs), counted from outside the relay: streams from
// gRPC's stats, connections from the simulated network, running tasks from
// the executor's gates and, when count is set, goroutines and worker
// goroutines from the goroutine profile. idle marks a sample after the
// cluster was idle for longer than the executor keep-alive.
func (c *Cluster) Sample(idle, count bool) {
	g := goroutineCounts{total: -1}
	if count {
		g = countRun(c.runID)
	}
	// A node stopping for an upgrade still serves the calls and streams in
	// flight (its peers' connections to it stay open until it has stopped).
	up := 0
	for _, sn := range c.nodes {
		if sn.up || sn.stopping {
			up++
		}
	}
	core, maxPool := c.poolSizes()
	running := 0
	for _, sn := range c.nodes {
		if sn.up {
			running += sn.hooks.tasks.running
		}
	}
	for _, sn := range c.nodes {
		if !sn.up {
			continue
		}
		m := sn.n.Metrics()
		s := model.Sample{
			Time: c.Now(), Node: sn.id, Core: core, Max: maxPool,
			Running: sn.hooks.tasks.running, PeakRunning: sn.hooks.tasks.peak, Workers: -1, Goroutines: -1,
			OpenStreams: int(sn.hooks.streams.open.Load()), Sessions: m.Sessions,
			Transitions: c.Sched.ParkedKinds(sn.id, system.PointSessionOpen, system.PointSessionClose) + c.Sched.ParkedPrefix(sn.id, KindRPCRecv, "Connect ") + m.Ending,
			InConns:     c.Net.OpenTo(sn.id), OutConns: c.Net.Open(sn.tag, "n"),
			LivePeers: up - 1, Peers: len(c.nodes) - 1, ChannelsPerPeer: c.channels, Idle: idle,
			PeerRunning: running - sn.hooks.tasks.running,
		}
		if count {
			s.Goroutines, s.Workers = g.node[sn.tag], g.workers[sn.tag]
		}
		sn.hooks.tasks.peak = sn.hooks.tasks.running
		sn.peakRunning = max(sn.peakRunning, s.PeakRunning)
		c.rec.sample(s)
	}
}

// poolSizes returns the executor sizes every node runs with.
func (c *Cluster) poolSizes() (core, maxPool int) {
	e := c.cfg.Executor
	if e.Core == 0 && e.Max == 0 {
		d := system.DefaultConfig().Executor
		return d.Core, d.Max
	}
	return e.Core, e.Max
}

// users sorted.
func (c *Cluster) userList() []*Client {
	names := make([]string, 0, len(c.users))
	for u := range c.users {
		names = append(names, u)
	}
	sort.Strings(names)
	out := make([]*Client, len(names))
	for i, u := range names {
		out[i] = c.users[u]
	}
	return out
}

// Final reads the only server state the oracle reads: the logs of the rooms
// the clients named.
func (c *Cluster) Final() (model.Final, error) {
	h := c.rec.history()
	logs, err := readLogs(c.Redis, roomsSeen(h.Events, h.Deliveries.Rooms()))
	return model.Final{Logs: logs}, err
}

// Snapshot returns the history so far for a check at a quiescent point,
// with the final state read now and every call still in flight added as
// an event of unknown outcome (Err "Pending").
func (c *Cluster) Snapshot() (*model.History, error) {
	var pending []model.Event
	for _, cl := range c.userList() {
		cl.mu.Lock()
		if cl.pending != nil {
			pending = append(pending, *cl.pending)
		}
		cl.mu.Unlock()
	}
	h := c.rec.snapshot(pending)
	h.Links = c.backlog.records()
	h.LogReads, h.Registry = c.logReads.records(), c.registry.records()
	f, err := c.Final()
	h.Final = f
	return &h, err
}

// setDefault sets *v to x unless x is zero (a field a mixed cluster's
// node keeps at its default).
func setDefault(v *int, x int) {
	if x != 0 {
		*v = x
	}
}

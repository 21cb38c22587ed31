package scenarios

import (
	"flag"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// TestRelayProperties generates rooms, membership changes, connections,
// sends and faults as a rapid state machine over a simulated cluster, in
// every relay mode, with mixed protocol versions and upgrades, and checks every property of DESIGN §4: the prefix
// properties (no stray delivery, per-room order, no loss, no stream leak,
// bounded workers) after every action, and everything after the liveness
// phase. The scheduler's picks are rapid draws, so schedules shrink with
// the actions. A failure prints the banner, with a pasteable command, and
// rapid's replay flags.
func TestRelayProperties(t *testing.T) {
	pinRapidSeed(t)
	for _, mode := range system.Modes {
		t.Run(string(mode), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				rapid.SyncTest(rt, func(rt *rapid.T) { runMachine(rt, mode) })
			})
		})
	}
}

// pinRapidSeed draws rapid's base seed here when -rapid.seed (or
// RAPID_SEED) did not set one, so that a banner can name it: rapid.T has no
// seed accessor, and rapid draws a fresh base per Check otherwise. With the
// same base seed rapid runs the same checks in the same order — the runs
// are deterministic — down to the same failure and shrunk case.
func pinRapidSeed(t *testing.T) {
	fl := flag.Lookup("rapid.seed")
	if fl == nil || fl.Value.String() != "0" {
		return
	}
	seed := new(maphash.Hash).Sum64() | 1
	if err := fl.Value.Set(strconv.FormatUint(seed, 10)); err != nil {
		t.Fatalf("set -rapid.seed: %v", err)
	}
	t.Cleanup(func() { _ = fl.Value.Set("0") })
}

// rapidReplay is the command that runs mode's property checks again from
// the same base seed, with every other rapid flag the run was given.
func rapidReplay(mode system.Mode) string {
	var extra []string
	if testing.Short() {
		extra = append(extra, "-short")
	}
	flag.Visit(func(fl *flag.Flag) {
		if strings.HasPrefix(fl.Name, "rapid.") && fl.Name != "rapid.seed" && fl.Name != "rapid.failfile" {
			extra = append(extra, fmt.Sprintf("-%s=%s", fl.Name, fl.Value))
		}
	})
	seed := "0"
	if fl := flag.Lookup("rapid.seed"); fl != nil {
		seed = fl.Value.String()
	}
	cmd := fmt.Sprintf("go test%s ./scenarios -run 'TestRelayProperties/%s$' -rapid.seed=%s", overlayArg(), mode, seed)
	if len(extra) > 0 {
		cmd += " " + strings.Join(extra, " ")
	}
	return cmd
}

// rapidChooser makes every scheduler pick a rapid draw.
type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) IntN(n int) int { return rapid.IntRange(0, n-1).Draw(c.t, "pick") }

// machine is the state machine: a cluster plus what the generator knows.
type machine struct {
	c     *sim.Cluster
	mode  system.Mode
	mix   sim.FaultMix
	users []string
	rooms []string
	msgs  int
	nodes int
	down  map[int]bool
	// sent are the sends made so far (who, where, which id): a steal
	// reuses one of them.
	sent []sentMsg
}

type sentMsg struct{ user, room, id string }

func runMachine(rt *rapid.T, mode system.Mode) {
	m := newMachine(rt, mode)
	defer m.c.Close()
	// Sends and bursts are listed twice: rapid picks actions uniformly, and
	// most bugs need traffic to show.
	rt.Repeat(map[string]func(*rapid.T){
		"send":        m.send,
		"send2":       m.send,
		"burst":       m.burst,
		"burst2":      m.burst,
		"join":        m.join,
		"leave":       m.leave,
		"connect":     m.connect,
		"disconnect":  m.disconnect,
		"vanish":      m.vanish,
		"crash":       m.crash,
		"restart":     m.restart,
		"partition":   m.partition,
		"heal":        m.heal,
		"flushRoutes": m.flushRoutes,
		"redisOutage": m.redisOutage,
		"redisSpike":  m.redisSpike,
		"pause":       m.pause,
		"slowClient":  m.slowClient,
		"upgrade":     m.upgrade,
		"steal":       m.steal,
		"badName":     m.badName,
		"forge":       m.forge,
		"recvBreak":   m.recvBreak,
		"overlap":     m.overlap,
		"":            m.invariants,
	})
	m.finish(rt)
}

func newMachine(rt *rapid.T, mode system.Mode) *machine {
	nodes := rapid.IntRange(2, 3).Draw(rt, "nodes")
	users := rapid.IntRange(2, 5).Draw(rt, "users")
	p := rapid.SampledFrom([]float64{0, 0.1, 0.3, 0.5})
	mix := sim.FaultMix{
		DropRequest: p.Draw(rt, "drop-request"), DropResponse: p.Draw(rt, "drop-response"),
		Duplicate: p.Draw(rt, "duplicate"), Delay: p.Draw(rt, "delay"),
		RedisError: rapid.SampledFrom([]float64{0, 0.01, 0.05}).Draw(rt, "redis-error"),
	}
	// The scheduler may delay a picked op (exploration by time, not only
	// by order), as the seed runs' random scheduler does.
	delayP := rapid.SampledFrom([]float64{0, 0.01, 0.05}).Draw(rt, "delay-p")
	strategy := &sim.Random{C: rapidChooser{rt}, DelayP: delayP, MaxDelay: 20 * time.Millisecond}
	m := &machine{mode: mode, mix: mix, down: map[int]bool{}}
	for i := 1; i <= users; i++ {
		m.users = append(m.users, fmt.Sprintf("u%d", i))
	}
	m.rooms = []string{"r1", "r2"}
	// Names in other scripts, some of the longest allowed length, in about
	// half the cases: they must relay live like any other.
	if rapid.Bool().Draw(rt, "wide-names") {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "names"), 0))
		m.users, _ = sim.WideNames(r, users)
		m.rooms, _ = sim.WideNames(r, 2)
	}
	m.nodes = nodes
	// Mixed-version clusters: mostly the latest protocol, sometimes an
	// older build, as in the middle of a rolling upgrade.
	versions := make([]int, nodes)
	for i := range versions {
		versions[i] = rapid.SampledFrom([]int{3, 3, 2, 1}).Draw(rt, "protocol")
	}
	// Mixed limits, as during a config rollout: some nodes refuse a long
	// payload or a call naming many recipients (0 keeps the default).
	limits := make([]sim.NodeLimits, nodes)
	for i := range limits {
		limits[i] = sim.NodeLimits{
			MaxPayload:    rapid.SampledFrom([]int{0, 0, 64, 200}).Draw(rt, "max-payload"),
			MaxRecipients: rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(rt, "max-recipients"),
		}
	}
	c, err := sim.NewCluster(sim.ClusterConfig{
		// No strictly judged bursts after recovery here: with the
		// machine's small pools (core 2) and its extreme latency draws a
		// burst's single-mode relays queue behind each other past the
		// live bound, which models the path, not a queue (the sweeps
		// judge them; docs/oracle.md).
		NoRecoveryTraffic: true,
		Seed:              sim.Seed(rapid.Uint64().Draw(rt, "seed")), Mode: mode, Nodes: nodes, Versions: versions, Limits: limits,
		Executor: system.ExecutorConfig{Core: 1, Max: 3, Queue: 2, KeepAlive: 5 * time.Second},
		Node:     func(nc *system.Config) { nc.OutboxSize = 16 },
		Cost:     sim.DefaultCost(), Mix: mix,
		Strategy: strategy,
		// Kept whole (cases are small): the banner shows the lines around
		// the evidence.
		Trace: sim.NewTrace(true, 60),
	})
	// Whatever ends the case before runMachine's deferred Close (a failed
	// start, rapid running out of data while the set-up draws scheduler
	// picks) must close the cluster here: its goroutines would outlive the
	// bubble, and synctest would report that deadlock instead of the cause.
	started := false
	defer func() {
		if !started && c != nil {
			c.Close()
		}
	}()
	if err != nil {
		rt.Fatalf("start cluster: %v", err)
	}
	c.SetBounds(sim.DefaultCost(), strategy.MaxDelay)
	m.c = c
	for _, r := range m.rooms {
		c.Do(sim.Action{User: m.users[0], Kind: sim.ActCreate, Room: r})
	}
	// Everybody starts in r1 and connected somewhere: traffic from step one.
	for _, u := range m.users {
		c.Do(sim.Action{User: u, Kind: sim.ActJoin, Room: m.rooms[0], At: 10 * time.Millisecond})
		c.Do(sim.Action{User: u, Kind: sim.ActConnect, Node: m.node(rt), At: 20 * time.Millisecond})
	}
	c.Sched.RunFor(50 * time.Millisecond)
	started = true
	return m
}

// act queues an action now and lets a drawn amount of virtual time pass.
func (m *machine) act(rt *rapid.T, a sim.Action) {
	a.At = m.c.Now()
	m.c.Do(a)
	gap := rapid.SampledFrom([]time.Duration{0, time.Millisecond, 20 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second}).Draw(rt, "then")
	m.c.Sched.RunFor(gap)
}

func (m *machine) user(rt *rapid.T) string { return rapid.SampledFrom(m.users).Draw(rt, "user") }
func (m *machine) room(rt *rapid.T) string { return rapid.SampledFrom(m.rooms).Draw(rt, "room") }
func (m *machine) node(rt *rapid.T) int {
	return rapid.IntRange(0, m.nodes-1).Draw(rt, "node")
}

func (m *machine) join(rt *rapid.T) {
	m.act(rt, sim.Action{User: m.user(rt), Kind: sim.ActJoin, Room: m.room(rt), Node: m.node(rt)})
}

func (m *machine) leave(rt *rapid.T) {
	m.act(rt, sim.Action{User: m.user(rt), Kind: sim.ActLeave, Room: m.room(rt), Node: m.node(rt)})
}

func (m *machine) connect(rt *rapid.T) {
	m.act(rt, sim.Action{User: m.user(rt), Kind: sim.ActConnect, Node: m.node(rt)})
}

func (m *machine) disconnect(rt *rapid.T) {
	m.act(rt, sim.Action{User: m.user(rt), Kind: sim.ActDisconnect})
}

func (m *machine) vanish(rt *rapid.T) {
	m.act(rt, sim.Action{User: m.user(rt), Kind: sim.ActVanish})
}

func (m *machine) send(rt *rapid.T) {
	m.msgs++
	a := sim.Action{User: m.user(rt), Kind: sim.ActSend, Room: m.room(rt), Node: m.node(rt), MsgID: fmt.Sprintf("m%d", m.msgs), Size: m.size(rt)}
	m.sent = append(m.sent, sentMsg{a.User, a.Room, a.MsgID})
	m.act(rt, a)
}

// steal makes a user send another user's message id, one already sent,
// with its own credential and payload: in the room it was sent to
// (where the stealer may or may not be a member) or, sometimes, the
// other room. A member's steal is its own new message, a non-member's is
// refused (content-integrity, no-loss, exactly-once judge it).
func (m *machine) steal(rt *rapid.T) {
	if len(m.sent) == 0 {
		rt.Skip("nothing sent yet")
	}
	v := rapid.SampledFrom(m.sent).Draw(rt, "victim")
	var others []string
	for _, u := range m.users {
		if u != v.user {
			others = append(others, u)
		}
	}
	room := v.room
	if rapid.IntRange(0, 3).Draw(rt, "other-room") == 0 {
		room = m.room(rt)
	}
	m.act(rt, sim.Action{User: rapid.SampledFrom(others).Draw(rt, "stealer"), Kind: sim.ActSteal, Room: room, Node: m.node(rt), MsgID: v.id})
}

// forge makes one call of a drawn Chat or Relay method with a drawn
// credential shape (the forge fault's), from one user's client naming
// another; forged-rejected judges it with the rest.
func (m *machine) forge(rt *rapid.T) {
	by, as := m.user(rt), rapid.SampledFrom(m.users).Draw(rt, "as")
	call := rapid.SampledFrom(sim.ForgeCalls()).Draw(rt, "call")
	shape := rapid.SampledFrom(system.CredShapes).Draw(rt, "cred")
	m.msgs++
	f, err := sim.NewForgery(call, m.room(rt), as, string(shape), m.msgs, m.node(rt))
	if err != nil {
		rt.Fatalf("forge: %v", err)
	}
	m.c.Forge(f, by)
	m.c.Sched.RunFor(rapid.SampledFrom([]time.Duration{0, time.Millisecond, 300 * time.Millisecond}).Draw(rt, "then"))
}

// burst makes every user send at the same instant: a dense moment where
// the order of parked operations decides the outcome.
func (m *machine) burst(rt *rapid.T) {
	room := m.room(rt)
	for _, u := range m.users {
		m.msgs++
		m.sent = append(m.sent, sentMsg{u, room, fmt.Sprintf("m%d", m.msgs)})
		m.c.Do(sim.Action{At: m.c.Now(), User: u, Kind: sim.ActSend, Room: room, Node: m.node(rt), MsgID: fmt.Sprintf("m%d", m.msgs), Size: m.size(rt)})
	}
	m.c.Sched.RunFor(rapid.SampledFrom([]time.Duration{0, 5 * time.Millisecond, time.Second}).Draw(rt, "then"))
}

// badName makes a call naming a malformed name (sim.BadNames): creating,
// joining or sending to a malformed room, joining or connecting as a
// malformed user, or sending a malformed message id. It must be refused
// with InvalidArgument and change nothing (model.CheckBadNamesRefused).
func (m *machine) badName(rt *rapid.T) {
	bad := rapid.SampledFrom(sim.BadNames).Draw(rt, "bad-name")
	a := sim.Action{User: m.user(rt), Room: m.room(rt), Node: m.node(rt),
		Kind: rapid.SampledFrom([]sim.ActionKind{sim.ActBadCreate, sim.ActBadJoin, sim.ActBadJoinAs, sim.ActBadSend, sim.ActBadSendID, sim.ActBadConnect}).Draw(rt, "call")}
	switch a.Kind {
	case sim.ActBadCreate, sim.ActBadJoin:
		a.Room = bad
	case sim.ActBadSend:
		m.msgs++
		a.Room, a.MsgID = bad, fmt.Sprintf("m%d", m.msgs)
	case sim.ActBadSendID:
		a.MsgID = bad
	case sim.ActBadJoinAs, sim.ActBadConnect:
		a.As = bad
	}
	m.act(rt, a)
}

func (m *machine) crash(rt *rapid.T) {
	i := m.node(rt)
	if m.down[i] || len(m.down)+1 >= len(m.c.NodeIDs()) {
		rt.Skip("keep one node up")
	}
	m.down[i] = true
	m.inject(rt, sim.Fault{Kind: model.FaultCrash, Node: i})
}

func (m *machine) restart(rt *rapid.T) {
	i := m.node(rt)
	if !m.down[i] {
		rt.Skip("node is up")
	}
	delete(m.down, i)
	m.inject(rt, sim.Fault{Kind: model.FaultRestart, Node: i})
}

func (m *machine) partition(rt *rapid.T) {
	n := len(m.c.NodeIDs())
	if n < 2 {
		rt.Skip("one node")
	}
	a := m.node(rt)
	f := sim.Fault{Kind: model.FaultPartition, Node: a, Peer: -1}
	if rapid.Bool().Draw(rt, "isolate") == false {
		f.Peer = (a + 1 + rapid.IntRange(0, n-2).Draw(rt, "peer")) % n
		f.OneWay = rapid.Bool().Draw(rt, "one-way")
	}
	m.inject(rt, f)
}

// recvBreak breaks the next relay stream item's stream at its receiver,
// between the read and the delivery (the stream.deliver gate), as the
// sender's next write breaking or its watchdog firing would; then lets a
// drawn time pass (a room that goes quiet after the break is where a lost
// item shows).
func (m *machine) recvBreak(rt *rapid.T) {
	if m.mode != system.ModeStream {
		rt.Skip("no relay streams")
	}
	m.c.BreakNextDelivery()
	m.send(rt)
}

func (m *machine) heal(rt *rapid.T) {
	m.c.Net.Heal()
	m.c.Sched.RunFor(10 * time.Millisecond)
}

// upgrade restarts a node with another protocol version (up or down: a
// rollback is an upgrade too), gracefully, under traffic.
func (m *machine) upgrade(rt *rapid.T) {
	i := m.node(rt)
	v := rapid.IntRange(1, 3).Draw(rt, "to")
	m.inject(rt, sim.Fault{Kind: model.FaultUpgrade, Node: i, Protocol: v})
}

// overlap restarts a node gracefully (with the same or another protocol
// version) with its new incarnation started before the old one has
// finished stopping: while the old one deregisters, lagging a drawn while
// after each of its stop commands.
func (m *machine) overlap(rt *rapid.T) {
	i := m.node(rt)
	v := rapid.IntRange(1, 3).Draw(rt, "to")
	lag := rapid.SampledFrom([]time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}).Draw(rt, "lag")
	m.inject(rt, sim.Fault{Kind: model.FaultUpgrade, Node: i, Protocol: v, Overlap: true, Lag: lag})
}

func (m *machine) flushRoutes(rt *rapid.T) { m.inject(rt, sim.Fault{Kind: model.FaultRouteFlush}) }

func (m *machine) redisOutage(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{50 * time.Millisecond, time.Second}).Draw(rt, "for")
	m.inject(rt, sim.Fault{Kind: model.FaultRedisOutage, For: d})
}

func (m *machine) redisSpike(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{200 * time.Millisecond, 2 * time.Second}).Draw(rt, "for")
	m.inject(rt, sim.Fault{Kind: model.FaultRedisSpike, For: d})
}

func (m *machine) pause(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second}).Draw(rt, "for")
	m.inject(rt, sim.Fault{Kind: model.FaultPause, Node: m.node(rt), For: d})
}

func (m *machine) slowClient(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{100 * time.Millisecond, 2 * time.Second}).Draw(rt, "for")
	// Through the fault injector, so that the oracle knows the client read
	// slowly (an action alone left it judging u's live deliveries as if
	// nothing had happened: a false timely-live-delivery).
	m.inject(rt, sim.Fault{Kind: model.FaultSlow, User: m.user(rt), For: d})
}

// inject applies a fault through the cluster's control panel (Apply: a
// goroutine of its own, since a restart passes gates the driver must keep
// scheduling).
func (m *machine) inject(rt *rapid.T, f sim.Fault) {
	if err := m.c.Apply(f); err != nil {
		rt.Fatalf("%v", err)
	}
}

// invariants are the properties that hold at every quiescent point: what
// was delivered so far is a prefix of what is owed, nothing is stray, no
// acked send is lost, streams match sessions, pools stay within bounds.
func (m *machine) invariants(rt *rapid.T) {
	m.c.Sample(false, true)
	if k := m.c.Sched.Collisions; len(k) > 0 {
		rt.Fatalf("gate key parked twice at once (harness bug): %s", k[0])
	}
	h, err := m.c.Snapshot()
	if err != nil {
		rt.Fatalf("read state: %v", err)
	}
	if vs := model.CheckPrefix(h); len(vs) > 0 {
		rt.Fatal(m.banner("invariant after an action", vs))
	}
}

// finish runs the liveness phase and checks everything.
func (m *machine) finish(rt *rapid.T) {
	// The runner's liveness phase, with a one-minute drain sampled once
	// (the pool's keep-alive is 5 s).
	if err := m.c.Drain(time.Minute, time.Minute); err != nil {
		rt.Fatalf("liveness: %v", err)
	}
	h, err := m.c.Snapshot()
	if err != nil {
		rt.Fatalf("read state: %v", err)
	}
	if vs := model.Check(h); len(vs) > 0 {
		rt.Fatal(m.banner("after the liveness phase", vs))
	}
}

func (m *machine) banner(when string, vs []model.Violation) string {
	recordViolations(vs)
	if *traceFlag != "" {
		_ = os.WriteFile(*traceFlag, []byte(m.c.Trace.Text()), 0o644)
	}
	return "\n" + sim.Report{
		Headline: fmt.Sprintf("relaysim property FAILED %s: mode=%s nodes=%d users=%d faults: %s",
			when, m.mode, len(m.c.NodeIDs()), len(m.users), m.mix),
		Violations: vs, Trace: m.c.Trace, TraceHash: m.c.Trace.Hash(),
		Replay: []string{rapidReplay(m.mode),
			"(the checks again from their base seed, down to the same shrunk case; the -rapid.failfile rapid prints below replays the shrunk case at once)"},
		Commit: fmt.Sprintf("a seed belongs to its commit (%s); rapid's fail files in testdata/rapid are kept as regression cases.", commit()),
	}.String()
}

// size draws a send's payload size: mostly short, sometimes over a small
// node's limit (0: the unpadded payload).
func (m *machine) size(rt *rapid.T) int {
	return rapid.SampledFrom([]int{0, 0, 0, 100, 300}).Draw(rt, "size")
}

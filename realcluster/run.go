package realcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// UsageError is bad input to the runner (exit 2), as opposed to a failure
// of the harness (exit 3) or of the relay (violations, exit 1).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Result is what a real run measured and found.
type Result struct {
	Config  Config
	Plan    int // planned client actions
	Ops     int // client calls made (connects included)
	Sends   int
	SendsOK int
	Live    int // deliveries pushed live
	FromLog int // deliveries from the room log
	Faults  map[model.FaultKind]int
	Load    time.Duration // the load phase as it ran
	Settle  time.Duration // the liveness phase until every member had what it is owed
	Settled bool
	Latency Latency
	// History is the path of the history file; Dir holds the logs.
	History    string
	PIDs       []int
	Violations []model.Violation
	// Probes are the code probes the relayd processes hit, summed over
	// every one that exited gracefully (docs/probes.md; nil: none).
	Probes map[string]int
	// Errs are harness failures met on the way (a restart that failed):
	// the run went on, but its verdict is not to be trusted.
	Errs []error
}

// FaultCount is the number of faults injected, forged calls included.
func (r *Result) FaultCount() int {
	n := 0
	for _, c := range r.Faults {
		n += c
	}
	return n
}

// Run runs cfg and judges it. The error is a UsageError for bad input,
// or another error when the harness could not run the cluster (then the
// Result holds only the PIDs it started, all stopped); a run that ran
// returns its Result, violations included, and a nil error.
func Run(ctx context.Context, cfg Config, log io.Writer) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, &UsageError{err}
	}
	if cfg.RedisAddr != "" {
		if err := loopbackOnly(cfg.RedisAddr); err != nil {
			return nil, &UsageError{fmt.Errorf("-redis: %w", err)}
		}
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "redis"), 0o755); err != nil {
		return nil, &UsageError{err}
	}
	hf, err := os.Create(filepath.Join(cfg.Dir, "history.jsonl"))
	if err != nil {
		return nil, &UsageError{err}
	}
	defer hf.Close()
	c := &cluster{cfg: cfg, log: log, proxies: map[[2]int]*proxy{}, injected: map[model.FaultKind]int{}}
	meta := Meta{Runner: "relaysim real", Seed: fmt.Sprintf("%#x", cfg.Seed), Mode: cfg.Mode, Start: time.Now()}
	for i := range cfg.Nodes {
		meta.Nodes = append(meta.Nodes, fmt.Sprintf("n%d", i+1))
	}
	c.rec = newRecorder(hf, meta)
	r := &runner{c: c, cfg: cfg, res: &Result{Config: cfg, History: hf.Name(), Faults: map[model.FaultKind]int{}}}
	defer func() {
		if cerr := r.teardown(); cerr != nil && err == nil {
			err = cerr
		}
		// Every relayd has exited: what they wrote of their probes.
		r.res.Probes = readProbes(cfg.Dir)
	}()
	err = r.start(ctx)
	if err == nil {
		err = r.run(ctx)
	}
	if err != nil && ctx.Err() != nil && !strings.HasPrefix(err.Error(), "interrupted") {
		err = fmt.Errorf("interrupted: %w", err)
	}
	return r.res, err
}

// runner is one run's phases.
type runner struct {
	c       *cluster
	cfg     Config
	res     *Result
	plan    plan
	conns   []*grpc.ClientConn
	clients map[string]*client
	stop    context.CancelFunc
	final   model.Final
	torn    bool
}

// start brings up Redis, the proxies and the nodes, and dials them.
func (r *runner) start(ctx context.Context) error {
	c := r.c
	if r.cfg.RedisAddr != "" {
		c.redisAddr = r.cfg.RedisAddr
		if err := c.checkExternalRedis(ctx); err != nil {
			return err
		}
	} else {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.redisPort, c.redisAddr = port, fmt.Sprintf("127.0.0.1:%d", port)
		if err := c.startRedis(ctx); err != nil {
			return fmt.Errorf("start redis-server: %w", err)
		}
	}
	for i := range r.cfg.Nodes {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.nodes = append(c.nodes, &node{id: fmt.Sprintf("n%d", i+1), port: port})
	}
	for i, from := range c.nodes {
		for j, to := range c.nodes {
			if i == j {
				continue
			}
			p, err := newProxy(from.id, to.id, to.addr())
			if err != nil {
				return err
			}
			c.proxies[[2]int{i, j}] = p
		}
	}
	for i := range c.nodes {
		if err := c.startNode(ctx, i, false); err != nil {
			return fmt.Errorf("start relayd: %w", err)
		}
	}
	for _, n := range c.nodes {
		cc, err := grpc.NewClient("passthrough:///"+n.addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
				MinConnectTimeout: 2 * time.Second}))
		if err != nil {
			return err
		}
		r.conns = append(r.conns, cc)
	}
	return nil
}

// run is the workload with the nemesis, the liveness phase and the
// checks.
func (r *runner) run(ctx context.Context) error {
	cctx, stop := context.WithCancel(ctx)
	r.stop = stop
	forges := 0
	if slices.Contains(r.cfg.Nemesis, KindForged) {
		forges = max(2, r.cfg.Faults/3)
	}
	r.plan = newPlan(r.cfg, forges)
	r.res.Plan = r.plan.size()
	r.clients = map[string]*client{}
	for _, u := range r.plan.Users {
		r.clients[u] = newClient(cctx, u, userSecret, r.nodeIDs(), r.conns, r.c.rec, r.cfg.Seed)
	}
	if err := r.setup(cctx); err != nil {
		return err
	}
	r.load(cctx)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if err := r.liveness(cctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return r.finish(ctx)
}

func (r *runner) nodeIDs() []string {
	out := make([]string, len(r.c.nodes))
	for i, n := range r.c.nodes {
		out[i] = n.id
	}
	return out
}

// setup creates the rooms, then every user joins its rooms and connects.
func (r *runner) setup(ctx context.Context) error {
	first := r.clients[r.plan.Users[0]]
	for _, room := range r.plan.Rooms {
		if ev := first.createRoom(room, 0); !ev.OK {
			return fmt.Errorf("set-up: create room %s: %s", room, ev.Err)
		}
	}
	r.eachUser(func(u string, cl *client) {
		for _, room := range r.plan.Initial[u] {
			cl.join(room, r.plan.Node[u])
		}
		cl.connect(r.plan.Node[u])
	})
	r.c.logf("set-up: %d rooms, %d users joined and connected", len(r.plan.Rooms), len(r.plan.Users))
	return ctx.Err()
}

// eachUser runs f for every user at once and waits.
func (r *runner) eachUser(f func(string, *client)) {
	var wg sync.WaitGroup
	for _, u := range r.plan.Users {
		wg.Go(func() { f(u, r.clients[u]) })
	}
	wg.Wait()
}

// load runs every user's actions and the nemesis for the load phase.
func (r *runner) load(ctx context.Context) {
	faults := planNemesis(r.cfg)
	r.c.logf("load: %d actions, %d faults planned, %v", r.res.Plan, len(faults), r.cfg.Duration)
	began := time.Now()
	nctx, cancel := context.WithDeadline(ctx, began.Add(r.cfg.Duration))
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { r.c.runNemesis(nctx, faults, began) })
	r.eachUser(func(u string, cl *client) { cl.runLoad(nctx, began, r.plan.Actions[u], len(r.c.nodes)) })
	wg.Wait()
	r.res.Load = time.Since(began)
}

// runLoad performs the user's actions at their times; a stream the server
// ended is reopened on the next node before the next action (unless the
// user is offline by plan).
func (cl *client) runLoad(ctx context.Context, began time.Time, actions []action, nodes int) {
	offline := false
	for _, a := range actions {
		if !sleepCtx(ctx, time.Until(began.Add(a.At))) {
			return
		}
		if node, need := cl.needsReconnect(); need && !offline && a.Kind != actConnect {
			cl.connect((node + 1) % nodes)
		}
		switch a.Kind {
		case actSend:
			cl.send(a.Room, a.Node)
		case actJoin:
			cl.join(a.Room, a.Node)
		case actLeave:
			cl.leave(a.Room, a.Node)
		case actConnect:
			offline = false
			cl.connect(a.Node)
		case actDisconnect:
			offline = true
			cl.disconnect()
		case actForge:
			cl.forge(a.Forge.Call, a.Room, a.Forge.As, a.Forge.Form, a.Forge.MsgID, a.Node)
		}
	}
}

// liveness: the nemesis is off; heal everything, reconnect everyone, and
// wait (at most Drain) until every member has received every message its
// windows owe it.
func (r *runner) liveness(ctx context.Context) error {
	began := time.Now()
	r.c.logf("liveness: faults off, heal, reconnect")
	if err := r.c.heal(ctx); err != nil {
		return fmt.Errorf("liveness: %w", err)
	}
	r.eachUser(func(u string, cl *client) {
		node := int(hashString(u) % uint64(len(r.c.nodes)))
		for try := range 10 {
			if cl.connect((node + try) % len(r.c.nodes)).OK {
				return
			}
			if !sleepCtx(ctx, 500*time.Millisecond) {
				return
			}
		}
	})
	deadline := began.Add(r.cfg.Drain)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		r.reconnectEnded()
		ok, why := r.settled(ctx)
		if ok {
			r.res.Settled = true
			break
		}
		if !sleepCtx(ctx, 500*time.Millisecond) || !time.Now().Before(deadline) {
			r.c.logf("liveness: not settled after %v: %s", r.cfg.Drain, why)
		}
	}
	r.res.Settle = time.Since(began)
	// A late duplicate would show within moments: wait one more second.
	sleepCtx(ctx, time.Second)
	r.c.logf("liveness: settled=%v after %v", r.res.Settled, r.res.Settle.Round(time.Millisecond))
	return nil
}

func (r *runner) reconnectEnded() {
	r.eachUser(func(u string, cl *client) {
		if node, need := cl.needsReconnect(); need {
			cl.connect((node + 1) % len(r.c.nodes))
		}
	})
}

// settled says whether every user has received every seq the windows its
// acks derive certainly owe it, up to each room's current seq; else why
// not.
func (r *runner) settled(ctx context.Context) (bool, string) {
	ms, _ := model.Memberships(&model.History{Events: r.c.rec.snapshot()})
	rdb := redisClient(r.c.redisAddr)
	defer rdb.Close()
	dir := system.NewDirectory(rdb)
	for _, room := range sortedKeys(ms) {
		top, err := dir.RoomSeq(ctx, room)
		if err != nil {
			return false, err.Error()
		}
		for _, user := range sortedKeys(ms[room]) {
			var owed []uint64
			for s := uint64(1); s <= top; s++ {
				for _, w := range ms[room][user].Owed {
					if w.Contains(s) {
						owed = append(owed, s)
						break
					}
				}
			}
			if cl := r.clients[user]; cl != nil && !cl.delivered(room, owed) {
				return false, fmt.Sprintf("%s misses some of %s's seqs up to %d", user, room, top)
			}
		}
	}
	return true, ""
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// finish closes the clients, reads the room logs, stops the processes and
// judges the history.
func (r *runner) finish(ctx context.Context) error {
	r.eachUser(func(_ string, cl *client) { cl.disconnect() })
	if err := waitRedis(ctx, r.c.redisAddr, r.c.redis, startTimeout); err != nil {
		return fmt.Errorf("read the room logs: %w", err)
	}
	rdb := redisClient(r.c.redisAddr)
	defer rdb.Close()
	dir := system.NewDirectory(rdb)
	r.final = model.Final{Logs: map[string][]model.LogEntry{}}
	for _, room := range r.plan.Rooms {
		entries, err := dir.Log(ctx, room, 1, 0)
		if err != nil {
			return fmt.Errorf("read the room logs: %w", err)
		}
		for _, e := range entries {
			le := model.LogEntry{Seq: e.Seq, MsgID: e.MsgID, Sender: e.Sender}
			if len(e.Payload) > 0 {
				le.Payload = model.PayloadDigest(e.Payload)
			}
			r.final.Logs[room] = append(r.final.Logs[room], le)
		}
	}
	if err := r.teardown(); err != nil {
		return err
	}
	return r.judge()
}

// teardown stops the clients, every process (by PID) and the proxies; it
// runs once, at the end or when the run fails or is interrupted.
func (r *runner) teardown() error {
	if r.torn {
		return nil
	}
	r.torn = true
	if r.stop != nil {
		r.stop()
	}
	for _, cl := range r.clients {
		cl.disconnectQuietly()
	}
	r.c.stopNodes()
	var errs []error
	if err := r.c.ps.stopAll(stopGrace); err != nil {
		errs = append(errs, err)
	}
	for _, p := range r.c.proxies {
		if err := p.close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cc := range r.conns {
		_ = cc.Close()
	}
	r.res.PIDs = r.c.ps.pids()
	r.c.logf("teardown: %d processes stopped", len(r.res.PIDs))
	return errors.Join(errs...)
}

// disconnectQuietly closes an open stream without recording it (after
// the run: the history is complete).
func (c *client) disconnectQuietly() {
	c.mu.Lock()
	cs := c.stream
	c.stream = nil
	if cs != nil {
		cs.closing = true
	}
	c.mu.Unlock()
	if cs != nil {
		cs.cancel()
		<-cs.done
	}
}

// judge writes the history's end and runs the checks.
func (r *runner) judge() error {
	c := r.c
	c.mu.Lock()
	r.res.Errs = slices.Clone(c.errs)
	for k, n := range c.injected {
		r.res.Faults[k] = n
	}
	c.mu.Unlock()
	h, err := c.rec.finish(r.cfg.Mode, r.final)
	if err != nil {
		return fmt.Errorf("write the history: %w", err)
	}
	for _, ev := range h.Events {
		switch {
		case ev.Kind == model.KindSend:
			r.res.Sends++
			if ev.OK {
				r.res.SendsOK++
			}
		case ev.Kind.Forged():
			r.res.Faults[KindForged]++
		}
		if ev.Kind != model.KindDeliver && ev.Kind != model.KindDisconnect && ev.Kind != model.KindPanic {
			r.res.Ops++
		}
	}
	r.res.Live, r.res.FromLog = model.DeliveryCounts(h)
	r.res.Latency = measureLatency(h)
	r.res.Violations = CheckHistory(h)
	return nil
}

// Package experiments runs the seeds' experiments in virtual time on the
// calibrated cost model (sim.Calibrated): Axis A and B of seed
// single-vs-bulk-relay-remeasured and Scenarios 1 and 2 of seed
// parallel-vs-bulk-relay, and renders their reports and charts.
//
// The load is the seed's: msgs/s of the room's members are senders, each
// sending once a second, in step (Actions). The pool grows past core when
// the busiest node's burst (its senders x the tasks per message) overflows
// core + queue, as the seed's ThreadPoolTaskExecutor did; nothing per cell
// is tuned, and the report says of each cell that does not reproduce why.
package experiments

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// Modes are the relay modes compared, in report order.
var Modes = []system.Mode{system.ModeSingle, system.ModeBulk}

// Condition is one column of the seed's tables: a room of Room members on
// 3 nodes (evenly spread), receiving Rate messages per second.
type Condition struct {
	Axis string // "A" or "B"
	Room int
	Rate float64
	Seed SeedRow // the seed's figures for this condition
}

// SeedRow is what the seed measured for one condition, per mode.
type SeedRow struct {
	Tasks    map[system.Mode]float64
	Pool     map[system.Mode]int
	P50, P95 map[system.Mode]float64 // ms
	Max      map[system.Mode]float64 // ms
}

func seedRow(ts, tb float64, ps, pb int, p50s, p50b, p95s, p95b, mxs, mxb float64) SeedRow {
	return SeedRow{
		Tasks: map[system.Mode]float64{system.ModeSingle: ts, system.ModeBulk: tb},
		Pool:  map[system.Mode]int{system.ModeSingle: ps, system.ModeBulk: pb},
		P50:   map[system.Mode]float64{system.ModeSingle: p50s, system.ModeBulk: p50b},
		P95:   map[system.Mode]float64{system.ModeSingle: p95s, system.ModeBulk: p95b},
		Max:   map[system.Mode]float64{system.ModeSingle: mxs, system.ModeBulk: mxb},
	}
}

// AxisA is the seed's Axis A: room 30, 90, 150 at 30 msg/s.
func AxisA() []Condition {
	return []Condition{
		{Axis: "A", Room: 30, Rate: 30, Seed: seedRow(890, 360, 30, 30, 64, 60, 107, 105, 340, 422)},
		{Axis: "A", Room: 90, Rate: 30, Seed: seedRow(2600, 950, 200, 30, 42, 73, 81, 111, 476, 410)},
		{Axis: "A", Room: 150, Rate: 30, Seed: seedRow(4400, 1550, 200, 30, 118, 45, 167, 80, 275, 202)},
	}
}

// AxisB is the seed's Axis B: room 150 at 10, 30, 50 msg/s.
func AxisB() []Condition {
	return []Condition{
		{Axis: "B", Room: 150, Rate: 10, Seed: seedRow(1500, 500, 170, 30, 36, 41, 71, 62, 219, 208)},
		{Axis: "B", Room: 150, Rate: 30, Seed: seedRow(4400, 1550, 200, 30, 118, 45, 167, 80, 275, 202)},
		{Axis: "B", Room: 150, Rate: 50, Seed: seedRow(7300, 2300, 200, 30, 181, 99, 298, 154, 662, 205)},
	}
}

func (c Condition) String() string { return fmt.Sprintf("room %d, %g msg/s", c.Room, c.Rate) }

// Options size a run of the experiments.
type Options struct {
	Load  time.Duration // the seed's 120 s
	Drain time.Duration // the seed's 60 s
	Seed  sim.Seed
	CPU   sim.CPUModel
	// Progress, when set, is told when a run starts and ends.
	Progress func(msg string)
	// T is the test running the experiments (nil outside tests: each run
	// then gets its own bubble from sim.Bubble).
	T *testing.T
}

// Full is the seed's length: 120 s of load and 60 s of drain.
func Full() Options {
	return Options{Load: 120 * time.Second, Drain: 60 * time.Second, Seed: 0x5eed, CPU: sim.Calibrated()}
}

// Short is the golden files' length: 6 s of load, 10 s of drain.
func Short() Options {
	return Options{Load: 6 * time.Second, Drain: 10 * time.Second, Seed: 0x5eed, CPU: sim.Calibrated()}
}

// Nodes of the experiments' cluster, as in the seed.
const Nodes = 3

// warmUp is when the load starts: after the rooms are joined and every
// user's stream is connected (the seed's k6 connected first too).
const warmUp = 2 * time.Second

// Row is one condition in one mode: the report's row.
type Row struct {
	Condition string  `json:"condition"`
	Axis      string  `json:"axis"`
	Room      int     `json:"room"`
	Mode      string  `json:"mode"`
	Rate      float64 `json:"msgs_per_s"`
	Messages  int     `json:"messages"`
	Delivered float64 `json:"delivered_pct"`
	Tasks     float64 `json:"tasks_per_s"`
	Formula   float64 `json:"formula_tasks_per_s"`
	// Peak is the most tasks running on one node's workers at once over
	// the run, counted by the simulation at the executor's gates (a task
	// released at its start gate and not yet at its done gate): the
	// workers the pool needed. The pool grows past core only when every
	// worker is busy and the queue is full, so a peak above core is the
	// seed's pool growth.
	Peak int `json:"peak_busy_workers"`
	// RelayPeak is the largest pool size the relay's own metrics reported
	// (any node): display only, never checked.
	RelayPeak  int     `json:"relay_peak_pool"`
	P50        float64 `json:"p50_ms"`
	P95        float64 `json:"p95_ms"`
	Max        float64 `json:"max_ms"`
	CallerRuns int64   `json:"caller_runs"`      // tasks released at the caller-runs gate
	CPU        float64 `json:"cpu_util"`         // mean utilisation of the nodes' CPUs over the load
	MaxWait    float64 `json:"max_core_wait_ms"` // the longest an op waited for a core (sim.Result.MaxWait)
	Redis      float64 `json:"redis_util"`       // Redis' utilisation over the load
	SeedTasks  float64 `json:"seed_tasks_per_s"`
	SeedPool   int     `json:"seed_peak_pool"`
	SeedP50    float64 `json:"seed_p50_ms"`
	SeedP95    float64 `json:"seed_p95_ms"`
	SeedMax    float64 `json:"seed_max_ms"`
	Violations int     `json:"violations"`
	// Failed counts the violations per property ("" when every property
	// of model.Check held), e.g. "timely-live-delivery=3".
	Failed string `json:"failed_properties,omitempty"`
	// Senders counts the senders on each node (Senders): with the
	// senders in step, the busiest node's burst is its senders times the
	// tasks per message.
	Senders     []int   `json:"senders_per_node"`
	TraceHash   string  `json:"trace_hash"`
	WallSeconds float64 `json:"-"`
	// Pool is, for each second from the start of the load on, the most
	// tasks running at once on the workers of the node that ran most
	// (counted as Peak): a per-second peak, not a level.
	Pool []PoolSecond `json:"-"`
}

// PoolSecond is the peak of busy workers over the second that ends At
// (virtual time since the load started), on the busiest node.
type PoolSecond struct {
	At   time.Duration
	Busy int
}

// pool is the seed's executor: core 30, max 200, queue 1000, keep-alive 60 s.
var pool = system.ExecutorConfig{Core: 30, Max: 200, Queue: 1000, KeepAlive: 60 * time.Second}

// Actions builds the workload of a condition as the seed ran it: a room
// of room members spread evenly over the nodes (member i on node i mod 3),
// all joined and connected before the load; then rate of them, a seeded
// random sample, are the senders ("the number of people actually sending
// messages"), each sending one message a second through its own node for
// the load. The senders are taken to be k6 virtual users started
// together (the seed's connections "were created at once"), so they
// send in step: every second, rate messages at the same virtual instant
// (the scheduler orders them). The seed's Axis B raises the senders (10,
// 30, 50) and so the messages per second.
func Actions(seed sim.Seed, room int, rate float64, load time.Duration) []sim.Action {
	users := make([]string, room)
	width := len(fmt.Sprint(room))
	for i := range users {
		users[i] = fmt.Sprintf("u%0*d", width, i+1)
	}
	tick := 50 * time.Millisecond
	as := []sim.Action{{At: 0, User: users[0], Kind: sim.ActCreate, Room: "r1"}}
	for i, u := range users {
		as = append(as, sim.Action{At: tick, User: u, Kind: sim.ActJoin, Room: "r1", Node: i % Nodes})
		as = append(as, sim.Action{At: 2 * tick, User: u, Kind: sim.ActConnect, Node: i % Nodes})
	}
	senders := Senders(seed, room, int(rate))
	for k := range int(load / time.Second) {
		at := warmUp + time.Duration(k)*time.Second
		for _, i := range senders {
			u := users[i]
			as = append(as, sim.Action{At: at, User: u, Kind: sim.ActSend, Room: "r1", Node: i % Nodes, MsgID: fmt.Sprintf("%s-m%d", u, k+1)})
		}
	}
	sort.SliceStable(as, func(i, j int) bool { return as[i].At < as[j].At })
	return as
}

// Senders are the indexes of the members who send, in increasing order: a
// seeded random sample of n of the room's members (all of them when n >=
// room).
func Senders(seed sim.Seed, room, n int) []int {
	r := seed.Derive("experiment").Derive("senders").Rand()
	idx := r.Perm(room)
	idx = idx[:min(n, room)]
	sort.Ints(idx)
	return idx
}

// SendersPerNode counts the senders on each node.
func SendersPerNode(seed sim.Seed, room, n int) []int {
	out := make([]int, Nodes)
	for _, i := range Senders(seed, room, n) {
		out[i%Nodes]++
	}
	return out
}

// Config is the simulation config of a condition in a mode: the seed's
// pool (core 30, max 200, queue 1000, caller-runs, keep-alive 60 s), no
// faults, the calibrated cost model, and a uniform cluster (no mixed
// limits, no overlapping restarts: the seed's cluster is one build).
func Config(o Options, mode system.Mode, users int, actions []sim.Action, load time.Duration) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Mode, cfg.Nodes = o.Seed, mode, Nodes
	cfg.Users, cfg.Rooms, cfg.RoomsPerUser, cfg.Churn = users, 1, 1, 0
	cfg.Duration = warmUp + load
	cfg.Drain = o.Drain
	cfg.Bounds = sim.NoFaults()
	cfg.Mixed, cfg.Overlap = 0, 0
	cfg.Executor = pool
	cfg.OutboxSize = system.DefaultConfig().OutboxSize
	cfg.SampleEvery = time.Second
	cfg.Actions = actions
	cpu := o.CPU
	cfg.CPU = &cpu
	return cfg
}

// RunCondition runs one condition in one mode.
func RunCondition(o Options, c Condition, mode system.Mode) Row {
	as := Actions(o.Seed, c.Room, c.Rate, o.Load)
	cfg := Config(o, mode, c.Room, as, o.Load)
	if o.Progress != nil {
		o.Progress(fmt.Sprintf("axis %s %s %s: running (%v load)", c.Axis, c, mode, o.Load))
	}
	var tc taskClock
	cfg.OnRelease = tc.release
	res := sim.Run(o.T, cfg)
	row := measure(o, c, mode, as, res, &tc)
	if o.Progress != nil {
		o.Progress(fmt.Sprintf("axis %s %s %s: done in %.0fs wall", c.Axis, c, mode, row.WallSeconds))
	}
	return row
}

// taskClock records, on the driver side, when each executor task finished:
// a worker's task at its done gate, a caller-runs task at its gate (it
// runs at once in its submitter and has no done gate). With the CPU model
// a task gate is released once the task's own work is done.
type taskClock struct {
	done    []time.Duration // release times, in release (time) order
	callers int64
}

func (tc *taskClock) release(op *sim.Op, now time.Duration) {
	switch op.Kind {
	case system.PointTaskDone:
		tc.done = append(tc.done, now)
	case system.PointTaskCaller:
		tc.done = append(tc.done, now)
		tc.callers++
	}
}

// upTo counts the tasks finished at or before t.
func (tc *taskClock) upTo(t time.Duration) int {
	return sort.Search(len(tc.done), func(i int) bool { return tc.done[i] > t })
}

func measure(o Options, c Condition, mode system.Mode, as []sim.Action, res *sim.Result, tc *taskClock) Row {
	row := Row{
		Condition: c.String(), Axis: c.Axis, Room: c.Room, Mode: string(mode), Rate: c.Rate,
		SeedTasks: c.Seed.Tasks[mode], SeedPool: c.Seed.Pool[mode], SeedP50: c.Seed.P50[mode],
		SeedP95: c.Seed.P95[mode], SeedMax: c.Seed.Max[mode],
		TraceHash: res.TraceHash, Violations: len(res.Violations), WallSeconds: res.Wall.Seconds(),
		Senders: SendersPerNode(o.Seed, c.Room, int(c.Rate)),
	}
	if res.Err != nil || res.BubbleErr != nil {
		row.Violations++
	}
	row.Failed = failedProperties(res)
	row.MaxWait = float64(res.MaxWait) / float64(time.Millisecond)
	local := float64(c.Room) / Nodes
	if mode == system.ModeSingle {
		row.Formula = c.Rate * float64(c.Room)
	} else {
		row.Formula = c.Rate * (local + Nodes - 1)
	}
	for _, p := range res.Peaks {
		row.RelayPeak = max(row.RelayPeak, p)
	}
	row.CallerRuns = tc.callers
	h := res.History
	if h == nil {
		return row
	}
	sentAt := map[string]time.Duration{}
	for _, a := range as {
		if a.Kind == sim.ActSend {
			sentAt[a.MsgID] = a.At
		}
	}
	type key struct {
		user string
		seq  uint64
	}
	seen := map[key]bool{}
	var lat []float64
	for _, e := range h.Events {
		if e.Kind == model.KindSend && e.OK {
			row.Messages++
		}
	}
	h.EachDelivery(func(e model.Event) {
		k := key{e.User, e.Seq}
		if seen[k] {
			return
		}
		seen[k] = true
		if at, ok := sentAt[e.MsgID]; ok {
			lat = append(lat, float64(e.Time-at)/float64(time.Millisecond))
		}
	})
	if row.Messages > 0 {
		row.Delivered = 100 * float64(len(seen)) / float64(row.Messages*c.Room)
	}
	row.P50, row.P95, row.Max = percentile(lat, 0.50), percentile(lat, 0.95), percentile(lat, 1)
	row.Tasks, row.Pool, row.Peak = taskRate(h.Samples, tc, o.Load)
	for _, b := range res.Busy {
		u := b.Busy.Seconds() / o.Load.Seconds()
		if b.Resource == "redis" {
			row.Redis = u / float64(max(o.CPU.RedisCores, 1))
		} else if strings.HasPrefix(b.Resource, "n") {
			row.CPU += u / float64(max(o.CPU.Cores, 1)) / Nodes
		}
	}
	return row
}

// taskRate computes the seed's Tasks/s: the rate of finished executor
// tasks (all nodes) over 10 s windows ending at the samples, averaged over
// the windows that lie inside the load; the busy workers over time (the
// largest node's PeakRunning per sample, from the first second of the load
// on: the sample taken when the load starts covers the warm-up's last
// second); and the peak of busy workers on any node over the run.
func taskRate(samples []model.Sample, tc *taskClock, load time.Duration) (float64, []PoolSecond, int) {
	busy := map[time.Duration]int{}
	var times []time.Duration
	peak := 0
	for _, s := range samples {
		if _, ok := busy[s.Time]; !ok {
			times = append(times, s.Time)
		}
		busy[s.Time] = max(busy[s.Time], s.PeakRunning)
		peak = max(peak, s.PeakRunning)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var pools []PoolSecond
	for _, t := range times {
		if t > warmUp {
			pools = append(pools, PoolSecond{At: t - warmUp, Busy: busy[t]})
		}
	}
	window := 10 * time.Second // the seed's rate(...[10s])
	if load < 2*window {
		window = max(time.Second, (load / 2).Truncate(time.Second)) // short runs
	}
	var sum float64
	var n int
	for _, t := range times {
		from := t - window
		if from < warmUp || t > warmUp+load {
			continue
		}
		if _, ok := busy[from]; ok {
			sum += float64(tc.upTo(t)-tc.upTo(from)) / window.Seconds()
			n++
		}
	}
	if n == 0 {
		return 0, pools, peak
	}
	return sum / float64(n), pools, peak
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[min(i, len(s)-1)]
}

// Axis runs every condition of an axis in both modes.
func Axis(o Options, conds []Condition) []Row {
	var rows []Row
	for _, c := range conds {
		for _, m := range Modes {
			rows = append(rows, RunCondition(o, c, m))
		}
	}
	return rows
}

// failedProperties names each property that failed in res, with its count,
// in name order; a run error counts as "run-error".
func failedProperties(res *sim.Result) string {
	n := map[string]int{}
	for _, v := range res.Violations {
		n[v.Property]++
	}
	if res.Err != nil || res.BubbleErr != nil {
		n["run-error"]++
	}
	names := make([]string, 0, len(n))
	for k := range n {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		names[i] = fmt.Sprintf("%s=%d", k, n[k])
	}
	return strings.Join(names, " ")
}

package sim

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// This file is what the simulation feeds the oracle besides the clients'
// view (client.go): the faults it injected, the work it counted at the
// executor's gates, samples taken from outside the relay, and the room logs
// decoded with code of its own. Nothing here asks the relay what it did.

// msgRe finds the message ("room#seq") an operation label or gate id names.
var msgRe = regexp.MustCompile(`(?:^|\s)([^\s#]+#[0-9]+)(?:\s|$)`)

// msgOf returns the "room#seq" an operation id names, or "".
func msgOf(id string) string {
	if m := msgRe.FindStringSubmatch(id); m != nil {
		return m[1]
	}
	return ""
}

// recordFault adds an injected fault to the history and returns its index
// (for faults that end later: see endFault).
func (c *Cluster) recordFault(f model.Fault) int {
	c.histMu.Lock()
	defer c.histMu.Unlock()
	if c.Trace.Frozen() {
		return -1
	}
	f.TraceLine = c.Trace.Lines()
	c.hist.Faults = append(c.hist.Faults, f)
	return len(c.hist.Faults) - 1
}

// opFault records a fault that hit one operation (a dropped request, a
// Redis error) of node, naming the message of the operation id.
func (c *Cluster) opFault(kind, id string, redis bool, nodes ...string) {
	now := c.Now()
	c.recordFault(model.Fault{From: now, To: now, Kind: kind, Op: true, Nodes: nodes, Redis: redis, Msg: msgOf(id)})
}

// endFault closes every open fault of kind that touches node (a crash at
// the node's restart, a partition at its heal): node "" closes them all.
func (c *Cluster) endFault(kind, node string) {
	c.histMu.Lock()
	defer c.histMu.Unlock()
	for i := range c.hist.Faults {
		f := &c.hist.Faults[i]
		if f.Kind == kind && f.To < 0 && (node == "" || slicesContains(f.Nodes, node)) {
			f.To = c.Now()
		}
	}
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// taskCounter counts, per message, the executor tasks that passed a node's
// task gates, and the tasks running on workers (released at the start gate,
// not yet at the done gate). Only a released goroutine touches it, so its
// contents do not depend on goroutine scheduling.
type taskCounter struct {
	running, peak int
}

// taskStarted is called by a released task-start gate of node.
func (c *Cluster) taskStarted(h *nodeHooks, label string, worker bool) {
	c.histMu.Lock()
	defer c.histMu.Unlock()
	if worker {
		h.tasks.running++
		h.tasks.peak = max(h.tasks.peak, h.tasks.running)
	}
	if c.Trace.Frozen() {
		return
	}
	room, seq, ok := splitMsg(msgOf(label))
	if !ok {
		return
	}
	k := taskKey{seq: seq, node: c.taskName(h.node), room: c.taskName(room), retry: strings.Contains(label, " retry")}
	if i, seen := c.taskIdx[k]; seen {
		c.tasks[i].count++
		return
	}
	if c.taskIdx == nil {
		c.taskIdx = map[taskKey]int32{}
	}
	c.taskIdx[k] = int32(len(c.tasks))
	c.tasks = append(c.tasks, taskRec{taskKey: k, count: 1, first: c.Now(), line: int32(c.Trace.Lines())})
}

// taskKey and taskRec are a model.Tasks while the run goes on, without a
// pointer: a dense run starts tasks for every message, and records that
// hold strings would be scanned by every GC cycle and keep a substring's
// whole gate key alive. Names are indexes into Cluster.taskNames.
type taskKey struct {
	seq        uint64
	node, room uint32
	retry      bool
}

type taskRec struct {
	taskKey
	count int32
	line  int32
	first time.Duration
}

// taskName is name's index in the task records' name table (histMu held).
func (c *Cluster) taskName(name string) uint32 {
	if i, ok := c.taskNameIdx[name]; ok {
		return i
	}
	if c.taskNameIdx == nil {
		c.taskNameIdx = map[string]uint32{}
	}
	name = strings.Clone(name)
	c.taskNameIdx[name] = uint32(len(c.taskNames))
	c.taskNames = append(c.taskNames, name)
	return uint32(len(c.taskNames) - 1)
}

// syncTasks sets hist.Tasks from the task records (histMu held): the
// history's readers (the checks, -history, tests) see model.Tasks.
func (c *Cluster) syncTasks() {
	c.hist.Tasks = make([]model.Tasks, len(c.tasks))
	for i, t := range c.tasks {
		c.hist.Tasks[i] = model.Tasks{Node: c.taskNames[t.node], Room: c.taskNames[t.room], Seq: t.seq, Retry: t.retry,
			Count: int(t.count), First: t.first, TraceLine: int(t.line)}
	}
}

// taskDone is called by a released task-done gate of node.
func (c *Cluster) taskDone(h *nodeHooks) {
	c.histMu.Lock()
	defer c.histMu.Unlock()
	h.tasks.running--
}

func splitMsg(msg string) (string, uint64, bool) {
	room, s, ok := strings.Cut(msg, "#")
	if !ok {
		return "", 0, false
	}
	var seq uint64
	_, err := fmt.Sscan(s, &seq)
	return room, seq, err == nil
}

// goroutineCounts counts the run's goroutines per node label (every
// goroutine a node incarnation starts inherits its label) and, among them,
// the executor's worker goroutines (a worker's stack holds Executor.work).
type goroutineCounts struct {
	total   int
	node    map[string]int // by incarnation tag
	workers map[string]int
}

const workerFrame = "system.(*Executor).work"

// profileBufs holds the buffers the goroutine profile is written into: one
// profile of a run is some 40 KB of text, taken at every sample, and growing
// a new buffer for each was a tenth of a run's allocation.
var profileBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// countRun counts run id's goroutines from the process's goroutine
// profile, or gives back the counts of the previous profile when it can
// prove they are the same (see profileCache).
func countRun(id string) goroutineCounts {
	created, live, known := goroutineTotals()
	if g, ok := lastProfile.get(id, created, live, known); ok {
		return g
	}
	buf := profileBufs.Get().(*bytes.Buffer)
	defer profileBufs.Put(buf)
	buf.Reset()
	if err := pprof.Lookup("goroutine").WriteTo(buf, 1); err != nil {
		return goroutineCounts{node: map[string]int{}, workers: map[string]int{}}
	}
	g := parseGoroutines(buf.Bytes(), id)
	if known {
		lastProfile.put(id, created, live, g)
	}
	return g
}

// profileCache keeps the last counts taken, with the process's goroutine
// totals read just before their profile. Taking the profile (it unwinds
// every goroutine's stack) was the largest cost of a default run; most
// samples of a run find no goroutine started or ended since the last one.
//
// Why reusing them is exact: the runtime counts every goroutine ever
// created (/sched/goroutines-created), and a stopped world counts the live
// ones exactly (goroutineTotals). If neither moved since the totals read
// before the previous profile, no goroutine was created after that read, and, none
// created, none ended either (the live count could only have fallen); so
// the profile would list the same goroutines. What it counts of each does
// not change over a goroutine's life: the run and node labels are
// inherited at creation, and in this process only the driver goroutine
// relabels itself (Run and NewCluster before any sample, startIncarnation
// around starting a node, which creates goroutines); a worker runs
// Executor.work from its first frame to its exit, and profiles keep 128
// frames of a stack, so the frame is always seen. A creation or an end
// anywhere in the process, between the read and the profile included,
// moves a total and forces a new profile. TestCountRunCacheExact checks
// the argument on whole runs: every sample the same with and without it.
type profileCache struct {
	mu            sync.Mutex
	off           bool // tests: always take the profile
	id            string
	created, live uint64
	counts        goroutineCounts
	valid         bool
	hits          int // samples that reused the counts (read by tests)
}

var lastProfile profileCache

func (c *profileCache) get(id string, created, live uint64, known bool) (goroutineCounts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || !known || !c.valid || c.id != id || c.created != created || c.live != live {
		return goroutineCounts{}, false
	}
	c.hits++
	return c.counts.clone(), true
}

func (c *profileCache) put(id string, created, live uint64, g goroutineCounts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.created, c.live, c.counts, c.valid = id, created, live, g.clone(), true
}

func (g goroutineCounts) clone() goroutineCounts {
	return goroutineCounts{total: g.total, node: maps.Clone(g.node), workers: maps.Clone(g.workers)}
}

// goroutineTotals reads how many goroutines the process has created (the
// runtime's counter) and how many are alive, the latter from
// runtime.GoroutineProfile's count, which stops the world: a goroutine
// that has just ended may still be counted by the runtime's live metric or
// NumGoroutine when the bubble has already woken the driver, but not once
// the world has stopped. known is false when the runtime does not offer
// the counter.
func goroutineTotals() (created, live uint64, known bool) {
	s := [1]metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, 0, false
	}
	var one [1]runtime.StackRecord
	n, _ := runtime.GoroutineProfile(one[:])
	return s[0].Value.Uint64(), uint64(n), true
}

// parseGoroutines counts, in a goroutine profile written with debug=1, the
// goroutines of run id: each record ("N @ pc...", its "# labels: {...}" line
// and its frames, records separated by a blank line) that carries the run's
// label adds its N to the total, to its node label's count and, when one of
// its frames is the executor's worker loop, to the node's workers. It reads
// the profile in place: no copy of the text, no slice of its records.
func parseGoroutines(text []byte, id string) goroutineCounts {
	out := goroutineCounts{node: map[string]int{}, workers: map[string]int{}}
	want := []byte(`"relaysim":"` + id + `"`)
	if bytes.HasPrefix(text, []byte("goroutine profile:")) {
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:] // the header line, not a record
		}
	}
	sep := []byte("\n\n")
	for len(text) > 0 {
		rec := text
		if i := bytes.Index(text, sep); i >= 0 {
			rec, text = text[:i], text[i+len(sep):]
		} else {
			text = nil
		}
		if !bytes.Contains(rec, want) {
			continue
		}
		n := leadingCount(rec)
		out.total += n
		tag := labelValue(rec, "node")
		if len(tag) == 0 {
			continue
		}
		out.node[string(tag)] += n
		if bytes.Contains(rec, []byte(workerFrame)) {
			out.workers[string(tag)] += n
		}
	}
	return out
}

// leadingCount reads a record's goroutine count, the decimal number its
// first line starts with (after any blanks), as fmt.Sscan did here before;
// 0 if there is none or it does not fit an int.
func leadingCount(rec []byte) int {
	rec = bytes.TrimLeft(rec, " \t\r\n")
	end := 0
	for end < len(rec) && rec[end] >= '0' && rec[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(string(rec[:end]))
	if err != nil {
		return 0
	}
	return n
}

// labelValue extracts a pprof label's value from a profile record's
// "# labels: {...}" line.
func labelValue(rec []byte, key string) []byte {
	i := bytes.Index(rec, []byte(`"`+key+`":"`))
	if i < 0 {
		return nil
	}
	after := rec[i+len(key)+4:]
	if j := bytes.IndexByte(after, '"'); j >= 0 {
		return after[:j]
	}
	return after
}

// readLogs reads the logs of rooms straight from miniredis after the run.
// The entries are decoded here, from the wire format of relay.proto's
// LogEntry (msg_id = 1, sender = 2), not with the relay's code: the oracle
// must not trust the decoder of the system it judges.
func readLogs(m *miniredis.Miniredis, rooms []string) (map[string][]model.LogEntry, error) {
	out := map[string][]model.LogEntry{}
	for _, room := range rooms {
		raw, err := m.List("room:" + room + ":log")
		if err != nil && err != miniredis.ErrKeyNotFound {
			return nil, fmt.Errorf("read log of %s: %w", room, err)
		}
		entries := make([]model.LogEntry, 0, len(raw))
		for i, r := range raw {
			e, err := decodeLogEntry([]byte(r))
			if err != nil {
				return nil, fmt.Errorf("read log of %s seq %d: %w", room, i+1, err)
			}
			e.Seq = uint64(i + 1)
			entries = append(entries, e)
		}
		out[room] = entries
	}
	return out, nil
}

func decodeLogEntry(b []byte) (model.LogEntry, error) {
	var e model.LogEntry
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return e, protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			if num == 1 {
				e.MsgID = string(v)
			} else {
				e.Sender = string(v)
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return e, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return e, nil
}

// roomsSeen lists the rooms the clients named (in events, or in
// deliveries: more), sorted.
func roomsSeen(events []model.Event, more []string) []string {
	seen := map[string]bool{}
	for _, ev := range events {
		if ev.Room != "" {
			seen[ev.Room] = true
		}
	}
	for _, r := range more {
		seen[r] = true
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// LiveBound is the time within which a connected member must receive a
// message no fault touched (model.CheckTimely), derived from the cost
// model: the longest chain of gated operations on the live path (the
// send's RPC and Lua script, a route look-up, the relay's RPC out and back
// in, the task, the session lock, the stream write and the client's
// receive: liveHops, each at its largest drawn latency), plus the scheduler
// delaying a few of them (liveDelays x its largest delay), times two.
func LiveBound(cost CostModel, maxDelay time.Duration) time.Duration {
	hop := max(cost.NetMin+2*cost.NetMean, cost.RedisMin+2*cost.RedisMean) + cost.TaskCost + cost.SendCost
	return 2 * (liveHops*hop + liveDelays*maxDelay)
}

// ContendedLiveBound is what the live bound grows by when ops wait for
// cores (CPUModel): each of the live path's hops at maxWait, the longest
// wait for a core any op of the run met, times two as LiveBound.
func ContendedLiveBound(maxWait time.Duration) time.Duration {
	return 2 * liveHops * maxWait
}

const (
	liveHops   = 16
	liveDelays = 4
)

// Recovery is how long the effects of each timed fault kind may outlast
// it on the live path: a restarted or healed peer is re-dialled with the
// connect back-off (at most deterministicConnect's MaxDelay plus
// MinConnectTimeout) after relays time out and retry (RelayTimeout x
// RelayAttempts); a flushed route comes back at the next refresh
// (RouteTTL/3); a vanished client's stale session absorbs pushes until the
// keep-alive reaps it; a relay whose request or response was lost holds a
// worker through its timeouts and back-offs ("op").
func Recovery(cfg system.Config) map[string]time.Duration {
	relay := time.Duration(cfg.RelayAttempts) * (cfg.RelayTimeout + time.Duration(cfg.RelayAttempts)*cfg.RelayBackoff)
	reconnect := deterministicConnect.Backoff.MaxDelay + deterministicConnect.MinConnectTimeout + relay
	// A broken relay stream holds its link's items until the writer has
	// backed off (attempt x RelayBackoff) and written them again on a new
	// stream: an injected break fails at once, it does not wait for the
	// write watchdog. After as many breaks as attempts the writer may give
	// the items up: they arrive with the members' next catch-up.
	resend := time.Duration(cfg.RelayAttempts) * cfg.RelayBackoff
	return map[string]time.Duration{
		"":              reconnect,
		"stream-break":  resend,
		"stream-giveup": relay + cfg.CatchUpInterval,
		"op":            relay,
		"route-flush":   cfg.RouteTTL/3 + reconnect,
		"vanish":        cfg.StreamKeepAlive + cfg.StreamKeepAliveTimeout + reconnect,
		"slow":          cfg.CatchUpInterval + reconnect,
	}
}

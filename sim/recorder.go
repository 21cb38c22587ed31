package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// recorder owns a run's history: every record the harness makes — a
// client's event or delivery, an injected fault, a node's protocol
// version, the executor's tasks, a sample — goes through it, under its one
// lock, and is streamed to the -history file as it is made (historyout.go).
// Scheduled runs record from one released goroutine at a time, so the lock
// is never contended there; the ungated negative control and teardown
// record concurrently. Nothing is recorded once the trace is frozen
// (teardown runs unscheduled).
type recorder struct {
	mu    sync.Mutex
	trace *dst.Trace
	hist  model.History
	out   *historyOut
	// tasks are the executor gates' records of each message (hist.Tasks
	// once synced: syncTasks); taskIdx finds a message's record, and
	// taskNames holds the node and room names they index.
	tasks       []taskRec
	taskIdx     map[taskKey]int32
	taskNames   []string
	taskNameIdx map[string]uint32
	// told is the story (ClusterConfig.Story): not part of the history.
	told []StoryEvent
}

func newRecorder(trace *dst.Trace, out *historyOut, mode system.Mode) *recorder {
	return &recorder{trace: trace, out: out, hist: model.History{Mode: string(mode)}}
}

// event appends a client-visible event.
func (r *recorder) event(ev model.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	r.hist.Events = append(r.hist.Events, ev)
	r.out.write(historyLine{Type: "event", Event: &ev})
}

// reserveEvents makes room for n more events: every action ends in one.
// Grown by append instead, a dense run's events were copied again and
// again, each copy's predecessor left to the collector while the run's
// memory was at its highest.
func (r *recorder) reserveEvents(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hist.Events = slices.Grow(r.hist.Events, n)
}

// delivery adds a delivery to the history's compact delivery log
// (model.DeliveryLog: ~8 bytes a delivery instead of an Event's ~200).
func (r *recorder) delivery(ev model.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	if r.hist.Deliveries == nil {
		r.hist.Deliveries = &model.DeliveryLog{}
	}
	r.hist.Deliveries.Add(ev)
	r.out.write(historyLine{Type: "event", Event: &ev})
}

// fault adds a fault, told by the trace's last line.
func (r *recorder) fault(f model.Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	f.TraceLine = r.trace.Lines()
	r.hist.Faults = append(r.hist.Faults, f)
}

// endFault closes, at now, every open fault of kind that touches node (a
// crash at the node's restart, a partition at its heal): node "" closes
// them all.
// endUserFault ends every record of a client's fault of kind that is
// open or would end later (the liveness phase ends them all now).
func (r *recorder) endUserFault(kind model.FaultKind, now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.hist.Faults {
		if f := &r.hist.Faults[i]; f.Kind == kind && (f.To < 0 || f.To > now) {
			f.To = now
		}
	}
}

func (r *recorder) endFault(kind model.FaultKind, node string, now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.hist.Faults {
		f := &r.hist.Faults[i]
		if f.Kind == kind && f.To < 0 && (node == "" || slices.Contains(f.Nodes, node)) {
			f.To = now
		}
	}
}

// endPartition ends, at now, the open partition over exactly nodes.
func (r *recorder) endPartition(nodes []string, now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.hist.Faults {
		f := &r.hist.Faults[i]
		if f.Kind == model.FaultPartition && f.To < 0 && strings.Join(f.Nodes, ",") == strings.Join(nodes, ",") {
			f.To = now
			return
		}
	}
}

// version records the protocol a node's new incarnation runs: the harness
// chose it, the relay is not asked.
func (r *recorder) badNodeStart(b model.BadNodeStart) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hist.BadNodeStarts = append(r.hist.BadNodeStarts, b)
}

func (r *recorder) version(v model.Version) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	r.hist.Versions = append(r.hist.Versions, v)
}

// limits records a node incarnation's limits.
func (r *recorder) limits(l model.Limits) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	r.hist.Limits = append(r.hist.Limits, l)
}

// relayed notes that a relay call or stream item carried room#seq to node
// `to` naming n recipients (model.History.Recipients keeps the most).
func (r *recorder) relayed(room string, seq uint64, to string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	if r.hist.Recipients == nil {
		r.hist.Recipients = map[string]int{}
	}
	k := fmt.Sprintf("%s#%d>%s", room, seq, to)
	r.hist.Recipients[k] = max(r.hist.Recipients[k], n)
}

// linkItem adds a relay stream item the harness saw a node write.
func (r *recorder) linkItem(it model.LinkItem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	r.hist.LinkItems = append(r.hist.LinkItems, it)
}

// relay adds a relay call the harness saw leave a node.
func (r *recorder) relay(rc model.RelayCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	rc.TraceLine = r.trace.Lines()
	r.hist.Relays = append(r.hist.Relays, rc)
}

// linkEvent adds what the harness saw of a relay stream link.
func (r *recorder) linkEvent(e model.LinkEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace.Frozen() {
		return
	}
	e.TraceLine = r.trace.Lines()
	r.hist.LinkEvents = append(r.hist.LinkEvents, e)
}

// strictFrom sets when the liveness phase's strictly judged traffic
// starts (model.History.StrictFrom).
func (r *recorder) strictFrom(t time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hist.StrictFrom = t
}

// rewound reports whether the run had a Redis rewind.
func (r *recorder) rewound() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.hist.Faults {
		if f.Kind == model.FaultRedisRewind {
			return true
		}
	}
	return false
}

// liveBound is the timely check's bound (0: unchecked).
func (r *recorder) liveBound() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist.LiveBound
}

// members returns, per room, the users whose last membership call on it
// was acked as a join (sorted); a user whose last membership call on the
// room failed (its outcome may be unknown) is left out.
func (r *recorder) members() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	type key struct{ room, user string }
	in, unsure := map[key]bool{}, map[key]bool{}
	for _, ev := range r.hist.Events {
		if ev.Kind != model.KindJoin && ev.Kind != model.KindLeave {
			continue
		}
		k := key{ev.Room, ev.User}
		if !ev.OK {
			unsure[k] = true
			continue
		}
		in[k] = ev.Kind == model.KindJoin
		delete(unsure, k)
	}
	out := map[string][]string{}
	for k, yes := range in {
		if yes && !unsure[k] {
			out[k.room] = append(out[k.room], k.user)
		}
	}
	for room := range out {
		sort.Strings(out[room])
	}
	return out
}

// sample adds a sample of a node taken at a quiescent point.
func (r *recorder) sample(s model.Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hist.Samples = append(r.hist.Samples, s)
}

// bounds lets set fill in the bounds the checkers judge the run by.
func (r *recorder) bounds(set func(h *model.History)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set(&r.hist)
}

// taskStarted is told by a released task-start gate of a node whose
// counters are tc (worker: the task runs on a worker, not its submitter).
func (r *recorder) taskStarted(tc *taskCounter, node string, m system.Message, worker bool, now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if worker {
		tc.running++
		tc.peak = max(tc.peak, tc.running)
	}
	if r.trace.Frozen() || m.Room == "" {
		return
	}
	k := taskKey{seq: m.Seq, node: r.taskName(node), room: r.taskName(m.Room), retry: m.Retry}
	if i, seen := r.taskIdx[k]; seen {
		r.tasks[i].count++
		return
	}
	if r.taskIdx == nil {
		r.taskIdx = map[taskKey]int32{}
	}
	r.taskIdx[k] = int32(len(r.tasks))
	r.tasks = append(r.tasks, taskRec{taskKey: k, count: 1, first: now, line: int32(r.trace.Lines())})
}

// taskDone is told by a released task-done gate of a node.
func (r *recorder) taskDone(tc *taskCounter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tc.running--
}

// taskCounter counts the tasks running on a node incarnation's workers
// (released at the start gate, not yet at the done gate) and their peak
// since the last sample. Only a released goroutine touches it, so its
// contents do not depend on goroutine scheduling.
type taskCounter struct {
	running, peak int
}

// taskKey and taskRec are a model.Tasks while the run goes on, without a
// pointer: a dense run starts tasks for every message, and records that
// hold strings would be scanned by every GC cycle. Names are indexes into
// recorder.taskNames.
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

// taskName is name's index in the task records' name table (mu held).
func (r *recorder) taskName(name string) uint32 {
	if i, ok := r.taskNameIdx[name]; ok {
		return i
	}
	if r.taskNameIdx == nil {
		r.taskNameIdx = map[string]uint32{}
	}
	name = strings.Clone(name)
	r.taskNameIdx[name] = uint32(len(r.taskNames))
	r.taskNames = append(r.taskNames, name)
	return uint32(len(r.taskNames) - 1)
}

// syncTasks sets hist.Tasks from the task records (mu held): the
// history's readers (the checks, -history, tests) see model.Tasks.
func (r *recorder) syncTasks() {
	r.hist.Tasks = make([]model.Tasks, len(r.tasks))
	for i, t := range r.tasks {
		r.hist.Tasks[i] = model.Tasks{Node: r.taskNames[t.node], Room: r.taskNames[t.room], Seq: t.seq, Retry: t.retry,
			Count: int(t.count), First: t.first, TraceLine: int(t.line)}
	}
}

// history returns the history recorded so far.
func (r *recorder) history() *model.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncTasks()
	return &r.hist
}

// snapshot returns a copy of the history so far that later records do not
// change (the events and deliveries copied), plus extra events.
func (r *recorder) snapshot(extra []model.Event) model.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncTasks()
	h := r.hist
	h.Events = append(append([]model.Event(nil), r.hist.Events...), extra...)
	h.Deliveries = r.hist.Deliveries.Snapshot()
	return h
}

// finish completes the history with the run's final state and writes
// what the -history file keeps to the end; it returns the first write
// error.
func (r *recorder) finish(final model.Final) (*model.History, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hist.Final = final
	r.syncTasks()
	return &r.hist, r.out.finish(&r.hist)
}

// story keeps a story event (ClusterConfig.Story).
func (r *recorder) story(e StoryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.told = append(r.told, e)
}

// storySoFar returns a copy of the story so far.
func (r *recorder) storySoFar() []StoryEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]StoryEvent(nil), r.told...)
}

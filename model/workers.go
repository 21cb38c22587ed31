package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CheckWorkers checks the executors from outside. At every sample: tasks
// running on workers at once (counted at the task gates) never above max;
// worker goroutines never above max and back at core once idle; the node's
// goroutines within h.GoroutineBound. For every acknowledged first dispatch
// of a message: the tasks that reached the sender node's task gates follow
// DESIGN §2.2 for the membership derived from the acks and the connections
// the clients observed. Retried dispatches are counted apart, not judged.
//
// The goroutine bound is not applied to a sample taken while its node was
// paused: a paused node holds every call it accepts, so a goroutine per
// call in flight piles up until the pause ends (each bounded by its
// caller's deadline), which the bound, counting connections and streams,
// does not foresee.
func CheckWorkers(h *History) []Violation {
	var out []Violation
	for _, s := range h.Samples {
		bound := h.GoroutineBound
		if pausedAt(h, s.Node, s.Time) {
			bound = nil
		}
		out = append(out, samplePool(s, bound)...)
	}
	return append(out, newJudge(h).dispatches()...)
}

func samplePool(s Sample, bound func(Sample) int) []Violation {
	var out []Violation
	add := func(format string, args ...any) {
		out = append(out, Violation{
			Property: PropWorkers, Node: s.Node,
			Detail: fmt.Sprintf("at t=%v: ", s.Time) + fmt.Sprintf(format, args...),
		})
	}
	if s.PeakRunning > s.Max {
		add("%d tasks ran on workers at once (counted at the task gates), above max %d", s.PeakRunning, s.Max)
	}
	if s.Workers > s.Max {
		add("%d worker goroutines, above max %d", s.Workers, s.Max)
	}
	if s.Idle && s.Workers > s.Core {
		add("%d worker goroutines after idle keep-alive, above core %d", s.Workers, s.Core)
	}
	if bound != nil && s.Goroutines >= 0 {
		if b := bound(s); s.Goroutines > b {
			add("%d goroutines exceed the bound %d (%d accepted and %d dialled connections, %d streams, pool max %d, %d tasks running on peers)",
				s.Goroutines, b, s.InConns, s.OutConns, s.OpenStreams, s.Max, s.PeerRunning)
		}
	}
	return out
}

// expectation is the range of tasks a first dispatch may submit, and why.
type expectation struct {
	lo, hi int
	why    string
}

// expectTasks derives a dispatch's task count from the model's own view:
// the members are the users whose derived windows hold the seq; a member is
// certainly local to the sender's node (or certainly on node M) when its
// client held a stream there through the whole send call and no fault that
// could have ended the session or lost its route touched it meanwhile.
// Single mode: one task per member. Bulk and stream mode: one per local
// member plus one per distinct remote server (DESIGN §2.2). The mode is
// the sender node's: the configured one, capped by the protocol version
// the harness started that node with. A member certainly on a remote node
// that had just left the sender's node may still have its old session
// there (see staleOn): it is local or on its node, so it may add a task
// but never removes its node from the destinations.
func (j *judge) expectTasks(send Event, conns map[string][]span) expectation {
	// The incarnation that acked the send dispatched it; a retried send
	// may have been invoked on an older one that ran another version.
	modes := []string{j.h.ModeAt(send.Node, send.Invoked)}
	// During an overlapping restart the stopping incarnation still serves
	// the calls on its open connections while the new one is up: either
	// may have dispatched the send. The stopping one's version is the
	// node's just before the stop began, or at that very instant: a
	// restart may begin when the incarnation it stops has just started
	// (its version then dates from the stop's own instant).
	for _, f := range j.h.Faults {
		if f.Kind == FaultOverlap && f.touchesNode(send.Node) && f.From <= send.Time && (f.To < 0 || f.To >= send.Invoked) {
			modes = []string{j.h.ModeAt(send.Node, f.From-1), j.h.ModeAt(send.Node, f.From)}
		}
	}
	modes = append(modes, j.h.ModeAt(send.Node, send.Time))
	slices.Sort(modes)
	modes = slices.Compact(modes)
	if len(modes) == 1 {
		return j.expectIn(modes[0], send, conns)
	}
	out := expectation{lo: math.MaxInt}
	var whys []string
	for _, m := range modes {
		e := j.expectIn(m, send, conns)
		out.lo, out.hi = min(out.lo, e.lo), max(out.hi, e.hi)
		whys = append(whys, fmt.Sprintf("%s in %s mode", e.why, m))
	}
	out.why = "the node was upgraded during the send: " + strings.Join(whys, " or ")
	return out
}

func (j *judge) expectIn(mode string, send Event, conns map[string][]span) expectation {
	var certain, maybe []string
	for _, user := range j.roomUsers(send.Room) {
		m := j.members[send.Room][user]
		switch {
		case m.owes(send.Seq):
			certain = append(certain, user)
		case m.allows(send.Seq):
			maybe = append(maybe, user)
		}
	}
	if mode == "single" {
		return expectation{len(certain), len(certain) + len(maybe),
			fmt.Sprintf("%s, %d more possible", nof(len(certain), "member"), len(maybe))}
	}
	// A Redis fault on the message's own operations (its MGET) leaves every
	// remote member unrouted.
	routed := !j.redisOpFault(msgKey(send.Room, send.Seq))
	local, servers, unsure := 0, map[string]bool{}, len(maybe)
	stale, staleServers := 0, map[string]bool{}
	for _, u := range certain {
		node, ok := j.certainlyOn(u, send, conns[u])
		switch {
		case !ok || (!routed && node != send.Node):
			unsure++
		case node == send.Node:
			local++
		case j.staleOn(send, conns[u]):
			stale++
			staleServers[node] = true
		default:
			servers[node] = true
		}
	}
	// Fewest tasks: every stale member's old session was gone, so it went
	// with its node's group. Most: every one of them was still local.
	lo := local + len(servers)
	for node := range staleServers {
		if !servers[node] {
			lo++
		}
	}
	why := fmt.Sprintf("%d local + %s, %s unsure", local, nof(len(servers), "remote server"), nof(unsure, "member"))
	if stale > 0 {
		why += fmt.Sprintf(", %s on %s maybe still local (they left this node within its close bound)", nof(stale, "member"), nof(len(staleServers), "remote server"))
	}
	return expectation{lo, local + len(servers) + stale + unsure, why}
}

// staleOn reports whether the sender node may still have held a session of
// a member during the send although the member's client had left that
// node: the client closed a stream there (or vanished from it) before the
// send completed, and the node need not close the stream's session before
// CheckStreamLeaks' bound for it (h.CloseBound after a close, the
// keep-alive bound after a vanish, longer by the node's pauses) has
// passed. Until then the node's dispatch finds the member local. A stream
// the server ended had its session closed before the client learnt of it.
// With no bound set, any such stream counts.
func (j *judge) staleOn(send Event, ss []span) bool {
	for _, s := range ss {
		if s.node != send.Node || s.open || s.end.Err != "" || !s.to.before(send.done()) {
			continue
		}
		bound, judged := closeBound(j.h, s.end)
		if !judged {
			return true
		}
		bound += pausedFor(j.h, send.Node, s.end.Time, s.end.Time+bound)
		if s.end.Time+bound >= send.inv().t {
			return true
		}
	}
	return false
}

// certainlyOn returns the node whose session certainly held user during the
// send call (and, for a remote node, whose route certainly named it).
func (j *judge) certainlyOn(user string, send Event, ss []span) (string, bool) {
	s, ok := connectedThrough(ss, send.inv(), send.done())
	if !ok {
		return "", false
	}
	_, hit := timedFault(j.h, s.from.t, send.Time, func(f Fault) bool {
		return f.User == user || f.touchesNode(s.node) || f.touchesNode(send.Node) ||
			(f.Redis && s.node != send.Node)
	})
	return s.node, !hit
}

// dispatches judges every acknowledged first dispatch.
func (j *judge) dispatches() []Violation {
	tasks := map[string][]Tasks{}
	for _, t := range j.h.Tasks {
		if !t.Retry {
			k := msgKey(t.Room, t.Seq)
			tasks[k] = append(tasks[k], t)
		}
	}
	conns := streams(j.h.Events)
	var out []Violation
	for _, ev := range j.h.Events {
		if ev.Kind != KindSend || !ev.OK || ev.Duplicate || ev.Seq == 0 {
			continue
		}
		out = append(out, j.judgeDispatch(ev, tasks[msgKey(ev.Room, ev.Seq)], conns)...)
	}
	return out
}

func (j *judge) judgeDispatch(send Event, seen []Tasks, conns map[string][]span) []Violation {
	v := Violation{Property: PropWorkers, Room: send.Room, Node: send.Node, Seq: send.Seq, TraceLines: lines(send.TraceLine)}
	n, line := 0, 0
	for _, t := range seen {
		if t.Node != send.Node {
			v.Detail = fmt.Sprintf("first-dispatch tasks ran on %s, but %s acked the send as its own (not a duplicate)", t.Node, send.Node)
			v.TraceLines = lines(send.TraceLine, t.TraceLine)
			return []Violation{v}
		}
		n, line = n+t.Count, t.TraceLine
	}
	want := j.expectTasks(send, conns)
	if n >= want.lo && n <= want.hi {
		return nil
	}
	if n < want.lo && j.crashedAfter(send) {
		return nil // tasks still queued when the node crashed never start
	}
	v.Detail = fmt.Sprintf("%s dispatch started %d tasks at the executor's gates, expected %s (%s)", j.h.ModeAt(send.Node, send.Invoked), n, want.rangeText(), want.why)
	v.TraceLines = lines(send.TraceLine, line)
	return []Violation{v}
}

func (e expectation) rangeText() string {
	if e.lo == e.hi {
		return strconv.Itoa(e.lo)
	}
	return fmt.Sprintf("%d..%d", e.lo, e.hi)
}

func (j *judge) crashedAfter(send Event) bool {
	for _, f := range j.h.Faults {
		if (f.Kind == FaultCrash || f.Kind == FaultUpgrade || f.Kind == FaultOverlap) && f.From >= send.Invoked && f.touchesNode(send.Node) {
			return true
		}
	}
	return false
}

func msgKey(room string, seq uint64) string { return room + "#" + strconv.FormatUint(seq, 10) }

func (j *judge) redisOpFault(msg string) bool {
	f, ok := j.opFaults()[msg]
	return ok && f.Redis
}

// nof is "1 member", "2 members", "0 members".
func nof(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// pausedAt reports whether a pause of node was on at t.
func pausedAt(h *History, node string, t time.Duration) bool {
	for _, f := range h.Faults {
		if f.Kind == FaultPause && f.touchesNode(node) && f.From <= t && (f.To < 0 || t <= f.To) {
			return true
		}
	}
	return false
}

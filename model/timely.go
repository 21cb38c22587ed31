package model

import (
	"fmt"
	"time"
)

// CheckTimely is timely live delivery: relays are an optimisation, and the
// periodic catch-up from the room log would hide a relay path that never
// works; so while no fault touches a message's path, every member connected
// through it must receive the message within h.LiveBound of the send's
// invocation. A member qualifies when its windows (from its acks) certainly
// hold the seq and its client had a stream open from LiveBound before the
// send was invoked until the deadline; the path is untouched when no timed
// fault (extended by its kind's recovery time) touched the sender's node,
// the member's node, Redis or the member in that stretch (a crash, pause or
// partition of any node counts: relays to it hold the workers of every
// sender), and no per-operation fault hit an operation of the message; a
// member on a node whose smaller limits may have refused the message is
// owed it through the catch-up only (refused.go). A delivery from the
// log within the bound counts: a live push of a later seq fills the gap
// before it (relays of consecutive messages may overtake each other), and a
// catch-up lands inside the bound only by coincidence; a broken relay path
// shows as deliveries that wait for the next message or the next catch-up.
//
// A send invoked at or after h.StrictFrom (the liveness phase's traffic,
// sent once the cluster has healed and settled) is judged strictly: no
// fault excuses it, whatever its recovery time, since every fault ended
// and every recovery the configuration allows is over by then.
//
// In a fault-free run (History.FaultFree: a churn-only or calm run) every
// send is judged with no fault excuse: membership and connection churn
// excuse only a member whose window did not certainly hold the seq or
// whose stream was not open over the whole window (or one that just left
// the sender's node); a retried send is judged too, from its first
// invocation (no fault made the client retry); and a member on a node
// whose smaller limits may refuse the message still owes it through the
// catch-up only (a limit is configuration, not a fault). No stale-link
// allowance applies: no fault phase left a link stale.
func CheckTimely(h *History) []Violation {
	if h.LiveBound <= 0 {
		return nil
	}
	return newJudge(h).timely()
}

func (j *judge) timely() []Violation {
	first := j.firstDeliveries()
	conns := streams(j.h.Events)
	var out []Violation
	for _, send := range j.h.Events {
		if !j.judgedLive(send) {
			continue
		}
		for _, user := range j.roomUsers(send.Room) {
			if v, bad := j.judgeLive(send, user, conns[user], first); bad {
				out = append(out, v)
			}
		}
	}
	return out
}

// judgedLive says whether a send's live delivery is judged: an acked
// first send whose message no per-operation fault hit. A send the client
// had to retry met a fault on its own way in.
func (j *judge) judgedLive(send Event) bool {
	if send.Kind != KindSend || !send.OK || send.Duplicate || send.Seq == 0 {
		return false
	}
	if j.strict(send) || j.h.FaultFree {
		return true
	}
	if send.Tries > 1 {
		return false
	}
	_, hit := j.opFaults()[msgKey(send.Room, send.Seq)]
	return !hit
}

// strict says whether send is judged with no fault excuse: it was invoked
// once the cluster had healed and settled (History.StrictFrom).
func (j *judge) strict(send Event) bool {
	return j.h.StrictFrom > 0 && send.Invoked >= j.h.StrictFrom
}

// StrictSends counts the sends CheckTimely judges strictly (after the
// heal and the settle time): the coverage of post-recovery traffic.
func StrictSends(h *History) int {
	j := newJudge(h)
	n := 0
	for _, send := range h.Events {
		if j.strict(send) && j.judgedLive(send) {
			n++
		}
	}
	return n
}

func (j *judge) judgeLive(send Event, user string, ss []span, first firsts) (Violation, bool) {
	bound := j.h.LiveBound
	if !j.membership(send.Room, user).owes(send.Seq) {
		return Violation{}, false
	}
	deadline := instant{send.Invoked + bound, 1 << 62}
	s, ok := connectedThrough(ss, instant{send.Invoked - bound, 0}, deadline)
	if !ok {
		return Violation{}, false
	}
	// A member whose earlier stream on the sender's node ended so recently
	// that the node may still hold its session (a vanished client until the
	// keep-alive reaps it, a closed one within the close bound) may have had
	// the message pushed to that session, as a local member, and get it from
	// the log: its path is not the one it is connected through.
	if s.node != send.Node && j.staleOn(send, ss) {
		return Violation{}, false
	}
	onLink := func(f Fault) bool { return len(f.Nodes) == 2 && f.Nodes[0] == send.Node && f.Nodes[1] == s.node }
	// A broken stream on the message's link delays it until the writer
	// has written it again: the bound runs from the last break's recovery.
	// Breaks chain: one inside the window a break opened delays the items
	// again, so the window grows until no further break falls in it (the
	// writer's resends of one item each meet the fault draws afresh; a
	// break counts for every channel of the node pair, since the harness
	// does not tell them apart). A writer that forgot the unacknowledged
	// items is late here.
	// (A recv-break, at the receiver, reaches the writer at its next
	// write or its close: its kind's recovery is the longer.)
	// A strict send relayed on a stream link may meet a stream the fault
	// phase left stale: bound for a previous incarnation of the member's
	// node, or cut by a partition or a blip and idle since. A writer that
	// carries nothing learns of it only when it next writes (the write or
	// the ack fails) or closes the stream: the receiver's refusal, or the
	// break, reaches it at most StaleLinkDelay (the linger) later, and it
	// hands the items over then, after one back-off. Once per link: the
	// strict traffic's later items find the link fresh.
	strict := j.strict(send)
	// noExcuse: no injected fault may excuse the send (after the heal, or
	// in a run with no fault at all); the relay's own refusals still delay.
	noExcuse := strict || j.h.FaultFree
	// A fault-phase send meets the same stale link when an earlier fault
	// left it so (the member's node restarted or overlapped, either end
	// paused or cut off) and nothing has written on it since: that fault
	// ended before the send's window, so it does not excuse the send, but
	// the link it left stale delays it by as much.
	if j.h.ModeAt(send.Node, send.Invoked) == "stream" && (strict || j.staleLinkBefore(send, s.node)) {
		deadline.t += j.h.StaleLinkDelay
	}
	// A message relayed on a stream waits at the receiver for the items
	// written on its link before it (they are handed over in order, one
	// after another): the bound grows by their hops.
	ahead := time.Duration(0)
	if s.node != send.Node {
		ahead = j.queuedAhead(send.Room, send.Seq, send.Node, s.node, send.Invoked-bound)
		deadline.t += ahead
	}
	rec := recoveryOf(j.h, FaultStreamBreak)
	base := deadline.t
	broke := time.Duration(-1)
	for grew := true; grew; {
		grew = false
		for _, f := range j.h.Faults {
			// After the heal no injected fault excuses anything; a
			// receiver's refusal of another item on the link (a smaller
			// limit) is no fault of the harness's and delays the link
			// all the same.
			if !f.Kind.BreaksStream() || noExcuse && f.Kind != FaultStreamRefused {
				continue
			}
			fr := recoveryOf(j.h, f.Kind)
			if onLink(f) && f.From > broke && f.From <= deadline.t && f.From+fr >= send.Invoked-bound {
				broke, grew, rec = f.From, true, fr
				deadline.t = max(deadline.t, broke+fr+bound)
			}
		}
	}
	// The member must still be connected when the item is due again: one
	// who disconnected in the stretch gets it from the log on its return.
	if deadline.t > base {
		if _, ok := connectedThrough(ss, instant{send.Invoked - bound, 0}, deadline); !ok {
			return Violation{}, false
		}
	}
	// A receiver whose smaller limits may have refused the message owes it
	// through the catch-up only (refused.go); never another message.
	if s.node != send.Node && j.refused(send, s.node, deadline.t) {
		return Violation{}, false
	}
	// Until the first deadline, any fault on the message's path excuses it.
	// In the stretch the breaks added, the message is an item on its link
	// waiting to be written again: what can hold it there is the link giving
	// up, the sender or the receiver going down, paused or cut off, Redis
	// failing (the writer reads the peer's address again after a break) or
	// the member's own client; not a fault elsewhere (no worker holds the
	// item), nor a route flush (the item is past routing).
	excuses := func(stretch bool) func(Fault) bool {
		return func(f Fault) bool {
			switch f.Kind {
			case FaultStreamBreak, FaultRecvBreak, FaultStreamRefused:
				return false // judged above: it delays, it does not excuse
			case FaultStreamGiveUp:
				// A relay stream's break holds no worker (relay tasks only
				// queue on the link): it touches that link's items alone.
				return onLink(f)
			case FaultRouteFlush:
				if stretch {
					return false
				}
			}
			// Before the first deadline a node that is down, paused or cut
			// off holds the workers of every node relaying to it (timeouts,
			// retries), and tasks queue behind them: a timed node fault
			// anywhere touches every path.
			return f.Redis || f.User == user || (!stretch && !f.Op && len(f.Nodes) > 0) ||
				f.touchesNode(send.Node) || f.touchesNode(s.node)
		}
	}
	if _, hit := timedFault(j.h, send.Invoked-bound, base, excuses(false)); hit && !noExcuse {
		return Violation{}, false
	}
	if _, hit := timedFault(j.h, base, deadline.t, excuses(true)); hit && !noExcuse {
		return Violation{}, false
	}
	d, got := first.get(user, send.Room, send.Seq)
	if got && d.Time <= deadline.t {
		return Violation{}, false
	}
	v := Violation{Property: PropTimely, User: user, Room: send.Room, Node: s.node, Seq: send.Seq, TraceLines: lines(send.TraceLine)}
	late := "never delivered"
	if got {
		late = fmt.Sprintf("delivered %v after the send was invoked%s", d.Time-send.Invoked, map[bool]string{true: " (from the log)"}[d.FromLog])
		v.TraceLines = lines(send.TraceLine, d.TraceLine)
	}
	v.Detail = fmt.Sprintf("connected on %s with no fault on the path from %s, but %s; bound %v", s.node, send.Node, late, bound)
	if j.h.FaultFree && !strict {
		v.Detail = fmt.Sprintf("connected on %s through the whole window, in a run with no fault (nothing excuses it), but %s; bound %v", s.node, late, bound)
	}
	if strict {
		v.Detail = fmt.Sprintf("connected on %s, sent after the heal and settle time (t=%v: no fault excuses it), but %s; bound %v", s.node, j.h.StrictFrom, late, bound)
	}
	if ahead > 0 {
		v.Detail += fmt.Sprintf(" (plus %v for the items queued ahead of it on the link)", ahead)
	}
	if broke >= 0 {
		v.Detail = fmt.Sprintf("connected on %s; the relay stream from %s broke at t=%v and its items were due again within %v, but %s",
			s.node, send.Node, broke, rec+bound, late)
	}
	return v, true
}

// staleLinkBefore says whether a timed fault that can leave the relay
// stream from send's node to node stale (a crash, restart, upgrade or
// overlapping incarnation of either end, a pause of either, a partition
// or a blip's lost stream between them) began before send was invoked.
func (j *judge) staleLinkBefore(send Event, node string) bool {
	for _, f := range j.h.Faults {
		if f.From >= send.Invoked {
			continue
		}
		switch f.Kind {
		case FaultCrash, FaultRestart, FaultUpgrade, FaultOverlap, FaultPause, FaultPartition:
			if f.touchesNode(node) || f.touchesNode(send.Node) {
				return true
			}
		}
	}
	return false
}

// firsts answers "when did user first receive (room, seq)" for the judged
// sends without keeping every delivery: per user and room the set of seqs
// received, and the first delivery itself only where it came after the
// earliest deadline of a judged send of its (room, seq) — a delivery
// before that deadline is in time for every send of the seq.
type firsts struct {
	seen map[userRoom]*seqSet
	late map[userRoomSeq]Event
}

func (j *judge) firstDeliveries() firsts {
	deadline := map[roomSeq]time.Duration{}
	for _, send := range j.h.Events {
		if !j.judgedLive(send) {
			continue
		}
		k, at := roomSeq{send.Room, send.Seq}, send.Invoked+j.h.LiveBound
		if d, ok := deadline[k]; !ok || at < d {
			deadline[k] = at
		}
	}
	f := firsts{seen: map[userRoom]*seqSet{}, late: map[userRoomSeq]Event{}}
	j.h.EachDelivery(func(ev Event) {
		k := userRoom{ev.User, ev.Room}
		s := f.seen[k]
		if s == nil {
			s = &seqSet{}
			f.seen[k] = s
		}
		if !s.add(ev.Seq) {
			return
		}
		if d, ok := deadline[roomSeq{ev.Room, ev.Seq}]; ok && ev.Time > d {
			f.late[userRoomSeq{ev.User, ev.Room, ev.Seq}] = ev
		}
	})
	return f
}

// get returns user's first delivery of (room, seq); when it was before
// every deadline only its Time is meaningful, and it is the earliest
// possible (0), which is in time.
func (f firsts) get(user, room string, seq uint64) (Event, bool) {
	if ev, late := f.late[userRoomSeq{user, room, seq}]; late {
		return ev, true
	}
	if s := f.seen[userRoom{user, room}]; s != nil && s.has(seq) {
		return Event{}, true
	}
	return Event{}, false
}

// DeliveryCounts returns how many deliveries came live and how many from the
// room log.
func DeliveryCounts(h *History) (live, fromLog int) {
	h.EachDelivery(func(ev Event) {
		if ev.FromLog {
			fromLog++
		} else {
			live++
		}
	})
	return live, fromLog
}

// CheckNoPanics reports every executor task that panicked (the node
// recovered it and carried on, which is how the bug would hide).
func CheckNoPanics(h *History) []Violation {
	var out []Violation
	for _, ev := range h.Events {
		if ev.Kind == KindPanic {
			out = append(out, Violation{
				Property: PropPanics, Node: ev.Node,
				Detail:     fmt.Sprintf("at t=%v a task panicked: %s", ev.Time, ev.Err),
				TraceLines: lines(ev.TraceLine),
			})
		}
	}
	return out
}

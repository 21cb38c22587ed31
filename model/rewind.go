package model

import (
	"math"
	"time"
)

// What the relay promises after Redis lost data (FaultRedisRewind: a
// restore from an older snapshot, a failover to a replica missing the
// last writes), and so what a rewind excuses — nothing else.
//
// Redis is the relay's only durable state: a rewind to a snapshot taken
// at S and restored at R loses what was written in between, and hands out
// again the seqs and epochs handed out then. The relay cannot keep:
//
//   - the messages of a room written in (S, R]: they may be gone from the
//     log although their senders were acked, and their seqs are given
//     again to later messages. A client that saw the old message at such
//     a seq skips the new one (it already has that seq). So every message
//     at a rewound seq of a room — lo..hi, from the lowest seq acked to a
//     send in flight during the rewind to the highest the room had handed
//     out (acked or delivered) by R — is excused from every delivery and
//     loss property, old and new alike;
//   - a join or leave in flight during the rewind (and a room created
//     then): it may be undone, so that user's membership of that room is
//     unknown from then on, and the violations naming that user in that
//     room are excused — and, in that room, a dispatch's task count,
//     which follows the members the relay read.
//
// Everything else stays judged: messages of rooms with no write in the
// rewind, every message at a seq above the rewound range, every user of
// a room whose own membership did not change during it, live delivery on
// time once the rewind's recovery (a route refresh) has passed, and the
// relay's convergence after it (a link whose sender's epoch went back
// must still carry its items: timely-live-delivery after the settle time
// catches a link that never does).

// rewinds is what the rewinds of a history excuse.
type rewinds struct {
	// seqs are each room's rewound seqs, [lo, hi].
	seqs map[string][2]uint64
	// pairs are the (user, room) memberships a rewind may have undone,
	// and rooms the rooms of those.
	pairs map[[2]string]bool
	rooms map[string]bool
}

// rewindsOf returns what h's rewinds excuse (nil: none).
func rewindsOf(h *History) *rewinds {
	var wins [][2]time.Duration
	for _, f := range h.Faults {
		if f.Kind == FaultRedisRewind {
			to := f.To
			if to < 0 {
				to = math.MaxInt64
			}
			wins = append(wins, [2]time.Duration{f.From, to})
		}
	}
	if len(wins) == 0 {
		return nil
	}
	x := &rewinds{seqs: map[string][2]uint64{}, pairs: map[[2]string]bool{}, rooms: map[string]bool{}}
	for _, w := range wins {
		x.add(h, w[0], w[1])
	}
	return x
}

// add adds what the rewind of [from, to] excuses.
func (x *rewinds) add(h *History, from, to time.Duration) {
	during := func(ev Event) bool { return ev.inv().t <= to && ev.Time >= from }
	lo, hi := map[string]uint64{}, map[string]uint64{}
	whole := map[string]bool{}
	for _, ev := range h.Events {
		switch ev.Kind {
		case KindSend:
			if !ev.OK || ev.Seq == 0 {
				continue
			}
			if during(ev) && (lo[ev.Room] == 0 || ev.Seq < lo[ev.Room]) {
				lo[ev.Room] = ev.Seq
			}
			if ev.inv().t <= to && ev.Seq > hi[ev.Room] {
				hi[ev.Room] = ev.Seq
			}
		case KindJoin, KindLeave:
			if during(ev) {
				x.pairs[[2]string{ev.User, ev.Room}] = true
				x.rooms[ev.Room] = true
			}
		case KindCreateRoom:
			if during(ev) {
				whole[ev.Room] = true
			}
		}
	}
	// A send in flight during the rewind may have written its message
	// before the restore and lost the reply (it failed, is pending, or was
	// retried and sequenced again after the restore, at another seq), and
	// the relay may deliver the lost sequencing after: its seq, seen only
	// in a delivery, is rewound too.
	inFlight := map[[2]string]bool{}
	for _, ev := range h.Events {
		if ev.Kind == KindSend && ev.MsgID != "" && during(ev) {
			inFlight[[2]string{ev.Room, ev.MsgID}] = true
		}
	}
	h.EachDelivery(func(ev Event) {
		if ev.Time <= to && ev.Seq > hi[ev.Room] {
			hi[ev.Room] = ev.Seq
		}
		if inFlight[[2]string{ev.Room, ev.MsgID}] && ev.Seq > 0 {
			if lo[ev.Room] == 0 || ev.Seq < lo[ev.Room] {
				lo[ev.Room] = ev.Seq
			}
			hi[ev.Room] = max(hi[ev.Room], ev.Seq)
		}
	})
	// A dispatch during the rewind shows a seq handed out then, though no
	// ack or delivery may name it (the reply lost, the relay failed).
	for _, t := range h.Tasks {
		if t.Seq > 0 && t.First >= from && t.First <= to {
			if lo[t.Room] == 0 || t.Seq < lo[t.Room] {
				lo[t.Room] = t.Seq
			}
			hi[t.Room] = max(hi[t.Room], t.Seq)
		}
	}
	for room, l := range lo {
		x.widen(room, l, max(hi[room], l))
	}
	for room := range whole {
		x.widen(room, 1, math.MaxUint64)
		for _, ev := range h.Events {
			if ev.Room == room && ev.User != "" {
				x.pairs[[2]string{ev.User, room}] = true
				x.rooms[room] = true
			}
		}
	}
}

func (x *rewinds) widen(room string, lo, hi uint64) {
	if r, ok := x.seqs[room]; ok {
		lo, hi = min(lo, r[0]), max(hi, r[1])
	}
	x.seqs[room] = [2]uint64{lo, hi}
}

// rewound reports whether seq of room is a rewound seq.
func (x *rewinds) rewound(room string, seq uint64) bool {
	r, ok := x.seqs[room]
	return ok && seq >= r[0] && seq <= r[1]
}

// filter returns h without the messages at rewound seqs: their sends,
// deliveries, log entries and dispatch tasks. Its deliveries are all in
// Events.
func (x *rewinds) filter(h *History) *History {
	g := *h
	g.Events = nil
	for _, ev := range h.Events {
		if (ev.Kind == KindSend || ev.Kind == KindDeliver) && ev.Seq > 0 && x.rewound(ev.Room, ev.Seq) {
			continue
		}
		g.Events = append(g.Events, ev)
	}
	h.Deliveries.Each(func(ev Event) {
		if !x.rewound(ev.Room, ev.Seq) {
			g.Events = append(g.Events, ev)
		}
	})
	g.Deliveries = nil
	g.Final.Logs = map[string][]LogEntry{}
	for room, es := range h.Final.Logs {
		var keep []LogEntry
		for _, e := range es {
			if !x.rewound(room, e.Seq) {
				keep = append(keep, e)
			}
		}
		g.Final.Logs[room] = keep
	}
	g.Tasks = nil
	for _, t := range h.Tasks {
		if !x.rewound(t.Room, t.Seq) {
			g.Tasks = append(g.Tasks, t)
		}
	}
	return &g
}

// excuse drops the violations that name a user in a room whose
// membership a rewind may have undone, or a rewound seq; and a dispatch's
// task count in a room with such a user (the count follows the members
// the relay read, which the acks no longer say).
func (x *rewinds) excuse(vs []Violation) []Violation {
	var out []Violation
	for _, v := range vs {
		if v.Room != "" && (x.pairs[[2]string{v.User, v.Room}] || v.Seq > 0 && x.rewound(v.Room, v.Seq)) {
			continue
		}
		if v.Property == PropWorkers && v.User == "" && x.rooms[v.Room] {
			continue
		}
		out = append(out, v)
	}
	return out
}

// withRewinds runs check on h as its rewinds leave it to be judged.
func withRewinds(h *History, check func(*History) []Violation) []Violation {
	x := rewindsOf(h)
	if x == nil {
		return check(h)
	}
	return x.excuse(check(x.filter(h)))
}

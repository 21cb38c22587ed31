package model

import (
	"encoding/binary"
	"time"
)

// DeliveryLog records a run's deliveries compactly: a delivery is the most
// frequent event by far (one per message and member), and as an Event it
// costs ~200 bytes; here it is a varint record of ~8 bytes, each field
// relative to the previous delivery of the same user and room (seq,
// message id) or to the previous record (time, trace line). Strings are
// interned: users, rooms and nodes in tables, message ids once per message.
// The checkers read it through History.EachDelivery, in the order the
// deliveries were added, as the Events they were added as.
//
// A DeliveryLog is appended to by one goroutine at a time; a Snapshot may
// be read while the original keeps growing.
type DeliveryLog struct {
	buf   []byte
	n     int
	users table
	rooms table
	nodes table
	msgs  table
	// encoding state: the previous record and, per user and room, the last
	// seq and message id index.
	lastTime time.Duration
	lastLine int
	pairs    map[[2]int]int
	pairLast []pairState
}

type pairState struct {
	seq uint64
	msg int
}

// table interns strings to small indexes.
type table struct {
	idx  map[string]int
	strs []string
}

func (t *table) intern(s string) int {
	if i, ok := t.idx[s]; ok {
		return i
	}
	if t.idx == nil {
		t.idx = map[string]int{}
	}
	t.idx[s] = len(t.strs)
	t.strs = append(t.strs, s)
	return len(t.strs) - 1
}

// Len is the number of deliveries recorded.
func (l *DeliveryLog) Len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// Rooms lists the rooms deliveries named, in first-seen order.
func (l *DeliveryLog) Rooms() []string {
	if l == nil {
		return nil
	}
	return l.rooms.strs
}

// Add records a delivery (ev.Kind must be KindDeliver).
func (l *DeliveryLog) Add(ev Event) {
	u, r := l.users.intern(ev.User), l.rooms.intern(ev.Room)
	node, msg := l.nodes.intern(ev.Node), l.msgs.intern(ev.MsgID)
	if l.pairs == nil {
		l.pairs = map[[2]int]int{}
	}
	p, ok := l.pairs[[2]int{u, r}]
	if !ok {
		p = len(l.pairLast)
		l.pairs[[2]int{u, r}] = p
		l.pairLast = append(l.pairLast, pairState{})
		l.buf = binary.AppendUvarint(l.buf, 0) // a new pair: its user and room follow
		l.buf = binary.AppendUvarint(l.buf, uint64(u))
		l.buf = binary.AppendUvarint(l.buf, uint64(r))
	} else {
		l.buf = binary.AppendUvarint(l.buf, uint64(p)+1)
	}
	last := &l.pairLast[p]
	l.buf = binary.AppendVarint(l.buf, int64(ev.Seq-last.seq))
	l.buf = binary.AppendVarint(l.buf, int64(msg-last.msg))
	l.buf = binary.AppendVarint(l.buf, int64(ev.Time-l.lastTime))
	l.buf = binary.AppendVarint(l.buf, int64(ev.TraceLine-l.lastLine))
	flags := uint64(node) << 1
	if ev.FromLog {
		flags |= 1
	}
	l.buf = binary.AppendUvarint(l.buf, flags)
	last.seq, last.msg = ev.Seq, msg
	l.lastTime, l.lastLine = ev.Time, ev.TraceLine
	l.n++
}

// Snapshot returns a read-only view of the deliveries so far; the original
// may go on growing (it only appends).
func (l *DeliveryLog) Snapshot() *DeliveryLog {
	if l == nil {
		return nil
	}
	return &DeliveryLog{
		buf: l.buf[:len(l.buf):len(l.buf)], n: l.n,
		users: table{strs: l.users.strs[:len(l.users.strs):len(l.users.strs)]},
		rooms: table{strs: l.rooms.strs[:len(l.rooms.strs):len(l.rooms.strs)]},
		nodes: table{strs: l.nodes.strs[:len(l.nodes.strs):len(l.nodes.strs)]},
		msgs:  table{strs: l.msgs.strs[:len(l.msgs.strs):len(l.msgs.strs)]},
	}
}

// Each calls fn with every delivery in the order they were added.
func (l *DeliveryLog) Each(fn func(Event)) {
	if l == nil {
		return
	}
	b := l.buf
	uvarint := func() uint64 {
		v, n := binary.Uvarint(b)
		b = b[n:]
		return v
	}
	varint := func() int64 {
		v, n := binary.Varint(b)
		b = b[n:]
		return v
	}
	type pair struct {
		user, room string
		pairState
	}
	var pairs []pair
	var t time.Duration
	line := 0
	for range l.n {
		p := int(uvarint())
		if p == 0 {
			u, r := uvarint(), uvarint()
			pairs = append(pairs, pair{user: l.users.strs[u], room: l.rooms.strs[r]})
			p = len(pairs) - 1
		} else {
			p--
		}
		st := &pairs[p]
		st.seq += uint64(varint())
		st.msg += int(varint())
		t += time.Duration(varint())
		line += int(varint())
		flags := uvarint()
		fn(Event{Time: t, Kind: KindDeliver, User: st.user, Room: st.room, Node: l.nodes.strs[flags>>1],
			Seq: st.seq, MsgID: l.msgs.strs[st.msg], FromLog: flags&1 == 1, TraceLine: line})
	}
}

// EachDelivery calls fn with every delivery of h: the KindDeliver events
// of h.Events, then those of h.Deliveries, each in recorded order. No
// checker depends on the order of a delivery relative to other kinds of
// events, only on the order of deliveries among themselves, and a history
// keeps its deliveries in one of the two places.
func (h *History) EachDelivery(fn func(Event)) {
	for _, ev := range h.Events {
		if ev.Kind == KindDeliver {
			fn(ev)
		}
	}
	h.Deliveries.Each(fn)
}

package model

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
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
// Memory stays flat in the run's length: once SpillAt bytes of records
// are held (Add checks after each record, so a chunk ends on a record), they
// are written to an unlinked temporary file and Each reads them back chunk
// by chunk. The checkers judge deliveries against the room logs and the
// membership windows the acks give, which are complete only at the end of a
// run, so the records are kept; the file holds what memory need not.
//
// A DeliveryLog is appended to by one goroutine at a time; a Snapshot may
// be read while the original keeps growing.
type DeliveryLog struct {
	// SpillAt is the chunk size in bytes past which records go to the
	// file (0: DefaultSpillAt; negative: never).
	SpillAt int
	buf     []byte
	n       int
	// spilled: the file and the lengths of the chunks written to it, in
	// order (shared with snapshots, which see a prefix).
	spill  *spillFile
	chunks []int
	users  table
	rooms  table
	nodes  table
	msgs   msgTable
	// encoding state: the previous record and, per user and room, the last
	// seq and message id index.
	lastTime time.Duration
	lastLine int
	pairs    map[[2]int]int
	pairLast []pairState
}

// DefaultSpillAt is the chunk size of a DeliveryLog: ~1 MiB, about 120,000
// deliveries, so that runs of the default size never touch the disk.
const DefaultSpillAt = 1 << 20

// spillFile is the file the chunks go to. It is unlinked as soon as it
// is created and closed when no log or snapshot refers to it any more.
type spillFile struct {
	f   *os.File
	off int64
}

func newSpillFile() (*spillFile, error) {
	f, err := os.CreateTemp("", "relaysim-deliveries-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // open files stay readable; nothing is left behind
	s := &spillFile{f: f}
	runtime.AddCleanup(s, func(f *os.File) { _ = f.Close() }, f)
	return s, nil
}

// flush writes the held records out as one chunk. A log that cannot write
// keeps its records in memory: it never loses one.
func (l *DeliveryLog) flush() {
	if l.spill == nil {
		s, err := newSpillFile()
		if err != nil {
			l.SpillAt = -1
			return
		}
		l.spill = s
	}
	if _, err := l.spill.f.WriteAt(l.buf, l.spill.off); err != nil {
		l.SpillAt = -1
		return
	}
	l.spill.off += int64(len(l.buf))
	l.chunks = append(l.chunks, len(l.buf))
	// A fresh buffer, not the old one reused: a snapshot may still read it.
	l.buf = make([]byte, 0, cap(l.buf))
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

// deliveredMsg is what a delivery carries of its message besides room and seq.
type deliveredMsg struct {
	id, sender string
	payload    uint64
}

// msgTable interns messages to small indexes.
type msgTable struct {
	idx  map[deliveredMsg]int
	keys []deliveredMsg
}

func (t *msgTable) intern(k deliveredMsg) int {
	if i, ok := t.idx[k]; ok {
		return i
	}
	if t.idx == nil {
		t.idx = map[deliveredMsg]int{}
	}
	t.idx[k] = len(t.keys)
	t.keys = append(t.keys, k)
	return len(t.keys) - 1
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
	node, msg := l.nodes.intern(ev.Node), l.msgs.intern(deliveredMsg{ev.MsgID, ev.Sender, ev.Payload})
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
	if at := l.spillAt(); at > 0 && len(l.buf) >= at {
		l.flush()
	}
}

func (l *DeliveryLog) spillAt() int {
	if l.SpillAt == 0 {
		return DefaultSpillAt
	}
	return l.SpillAt
}

// Spilled returns how many bytes of records went to the file.
func (l *DeliveryLog) Spilled() int64 {
	if l == nil || l.spill == nil {
		return 0
	}
	var n int64
	for _, c := range l.chunks {
		n += int64(c)
	}
	return n
}

// Snapshot returns a read-only view of the deliveries so far; the original
// may go on growing (it only appends).
func (l *DeliveryLog) Snapshot() *DeliveryLog {
	if l == nil {
		return nil
	}
	return &DeliveryLog{
		SpillAt: -1, // a snapshot is only read
		buf:     l.buf[:len(l.buf):len(l.buf)], n: l.n,
		spill: l.spill, chunks: l.chunks[:len(l.chunks):len(l.chunks)],
		users: table{strs: l.users.strs[:len(l.users.strs):len(l.users.strs)]},
		rooms: table{strs: l.rooms.strs[:len(l.rooms.strs):len(l.rooms.strs)]},
		nodes: table{strs: l.nodes.strs[:len(l.nodes.strs):len(l.nodes.strs)]},
		msgs:  msgTable{keys: l.msgs.keys[:len(l.msgs.keys):len(l.msgs.keys)]},
	}
}

// Each calls fn with every delivery in the order they were added.
func (l *DeliveryLog) Each(fn func(Event)) {
	if l == nil {
		return
	}
	d := decoder{l: l}
	var chunk []byte
	var off int64
	for _, size := range l.chunks {
		if cap(chunk) < size {
			chunk = make([]byte, size)
		}
		chunk = chunk[:size]
		if _, err := l.spill.f.ReadAt(chunk, off); err != nil && err != io.EOF {
			panic(fmt.Sprintf("model: reading back the spilled deliveries: %v", err))
		}
		off += int64(size)
		d.each(chunk, fn)
	}
	d.each(l.buf, fn)
}

// decoder reads records back; its state runs across chunks.
type decoder struct {
	l     *DeliveryLog
	pairs []decodedPair
	t     time.Duration
	line  int
	done  int
}

type decodedPair struct {
	user, room string
	pairState
}

// each decodes the records of b, which holds whole records.
func (d *decoder) each(b []byte, fn func(Event)) {
	l := d.l
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
	for len(b) > 0 && d.done < l.n {
		p := int(uvarint())
		if p == 0 {
			u, r := uvarint(), uvarint()
			d.pairs = append(d.pairs, decodedPair{user: l.users.strs[u], room: l.rooms.strs[r]})
			p = len(d.pairs) - 1
		} else {
			p--
		}
		st := &d.pairs[p]
		st.seq += uint64(varint())
		st.msg += int(varint())
		d.t += time.Duration(varint())
		d.line += int(varint())
		flags := uvarint()
		d.done++
		m := l.msgs.keys[st.msg]
		fn(Event{Time: d.t, Kind: KindDeliver, User: st.user, Room: st.room, Node: l.nodes.strs[flags>>1],
			Seq: st.seq, MsgID: m.id, Sender: m.sender, Payload: m.payload, FromLog: flags&1 == 1, TraceLine: d.line})
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

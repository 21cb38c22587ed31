package sim

import (
	"sort"
	"sync"
	"time"

	"github.com/relaysim/relaysim/model"
)

// backlogCounter counts each relay stream link's backlog from the wire,
// for bounded-backlog (model.CheckBacklog): the items each stream carried
// (simClientStream.SendMsg, once gRPC took the item) and the acks that
// came back (RecvMsg). It takes nothing on the relay's word: the bounds
// are the nodes' configuration as the harness started them, the counts
// what crossed the network.
type backlogCounter struct {
	mu sync.Mutex
	// bounds are each node's StreamBacklog and RelayAttempts, as the
	// harness configured its current incarnation.
	bounds map[string][2]int
	links  map[string]*linkCount
	order  []string // links in the order first seen
}

type linkCount struct {
	rec    model.LinkBacklog
	stream string // the stream the items count is of
	items  int
	acked  uint64
	// streams counts, per item not yet acknowledged, the streams that
	// carried it.
	streams map[uint64]int
}

// configured records node's bounds (at each start of an incarnation).
func (b *backlogCounter) configured(node string, backlog, attempts int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bounds == nil {
		b.bounds = map[string][2]int{}
	}
	b.bounds[node] = [2]int{backlog, attempts}
}

// written counts item seq of link, carried by stream (its sender from,
// receiver to); it returns the items the stream carried so far and the
// link's bound.
func (b *backlogCounter) written(from, to, link, stream string, seq uint64, now time.Duration, line int) (int, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.links == nil {
		b.links = map[string]*linkCount{}
	}
	l := b.links[link]
	if l == nil {
		bd := b.bounds[from]
		l = &linkCount{rec: model.LinkBacklog{Link: link, From: from, To: to, Bound: bd[0], Attempts: bd[1]}, streams: map[uint64]int{}}
		b.links[link] = l
		b.order = append(b.order, link)
	}
	if l.stream != stream {
		l.stream, l.items = stream, 0
	}
	l.items++
	if l.items > l.rec.MaxItems {
		l.rec.MaxItems, l.rec.ItemsAt, l.rec.ItemsLine = l.items, now, line
	}
	if seq > l.acked {
		l.streams[seq]++
		if n := l.streams[seq]; n > l.rec.MaxStreams {
			l.rec.MaxStreams, l.rec.Item, l.rec.StreamsAt, l.rec.StreamsLine = n, seq, now, line
		}
	}
	return l.items, l.rec.Bound
}

// acked counts an ack of link up to seq.
func (b *backlogCounter) acked(link string, seq uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.links[link]
	if l == nil || seq <= l.acked {
		return
	}
	l.acked = seq
	for s := range l.streams {
		if s <= seq {
			delete(l.streams, s)
		}
	}
}

// records returns the links' counts, in the order first seen.
func (b *backlogCounter) records() []model.LinkBacklog {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]model.LinkBacklog, 0, len(b.order))
	for _, k := range b.order {
		out = append(out, b.links[k].rec)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Link < out[j].Link })
	return out
}

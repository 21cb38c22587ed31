package model

import (
	"sort"
	"time"
)

// LinkItem is one relay stream item the harness saw a node write: the
// message it carried to node To and how many recipients it named. A
// resent item is written again, and recorded again.
type LinkItem struct {
	Time       time.Duration
	From, To   string
	Room       string
	Seq        uint64
	Recipients int
}

// A receiving node hands one link's items to their recipients in the
// order they came, one after another (it is what keeps a room's order on
// the link): an item waits for every item written on its link before it.
// Per recipient, handing an item over is a few gated steps: the session's
// lock, a gap fill's two reads of the room (its window and its log) and
// the push; per item, its receipt and its dispatch.
const (
	itemHops         = 2
	itemHopsPerRecip = 4
)

// linkQueue indexes the stream items by link (From>To), in the order
// written, and by message and link (the first write of each).
type linkQueue struct {
	byLink map[string][]LinkItem
	first  map[string]time.Duration // "room#seq>from>to"
}

func (j *judge) linkQueue() *linkQueue {
	if j.items != nil {
		return j.items
	}
	q := &linkQueue{byLink: map[string][]LinkItem{}, first: map[string]time.Duration{}}
	for _, it := range j.h.LinkItems {
		link := it.From + ">" + it.To
		q.byLink[link] = append(q.byLink[link], it)
		k := msgKey(it.Room, it.Seq) + ">" + link
		if _, ok := q.first[k]; !ok {
			q.first[k] = it.Time
		}
	}
	j.items = q
	return q
}

// queuedAhead is how much later than the live bound a message relayed
// from node `from` to node `to` on a stream may arrive because of the
// items written on that link before it: each item written since `since`
// and before the message's own first write may still be ahead of it at
// the receiver, and costs its hops (itemHops, plus itemHopsPerRecip per
// recipient) at h.ItemHop each. Zero when the message went on no stream
// item to that node, or when h.ItemHop is unset.
func (j *judge) queuedAhead(room string, seq uint64, from, to string, since time.Duration) time.Duration {
	if j.h.ItemHop <= 0 || len(j.h.LinkItems) == 0 {
		return 0
	}
	q := j.linkQueue()
	link := from + ">" + to
	at, ok := q.first[msgKey(room, seq)+">"+link]
	if !ok {
		return 0
	}
	items := q.byLink[link]
	lo := sort.Search(len(items), func(i int) bool { return items[i].Time >= since })
	hops := 0
	for _, it := range items[lo:] {
		if it.Time > at || it.Time == at && it.Room == room && it.Seq == seq {
			break
		}
		hops += itemHops + itemHopsPerRecip*max(it.Recipients, 1)
	}
	return time.Duration(hops) * j.h.ItemHop
}

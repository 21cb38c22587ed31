package model

import (
	"fmt"
	"time"
)

// LinkBacklog is what the harness counted, from the wire, of one relay
// stream link (a sender's peer channel, named as its items name it:
// "n1@1.2#0"): the items its streams carried and the acks that came back.
// A link's writer writes what it holds unacknowledged at the start of
// each stream and then what it takes from its queue, and an ack covers
// every item its stream carried; so the items one stream carries are all
// held by the link at once before its ack, and an item written on a
// further stream was still held after the previous one broke.
type LinkBacklog struct {
	Link     string
	From, To string // sender and receiver node
	// Bound is the sender's configured StreamBacklog (queued plus
	// unacknowledged items), Attempts its RelayAttempts: both read from
	// the node's configuration when it started, never from its messages.
	Bound, Attempts int
	// MaxItems is the most items one stream of the link carried, first
	// reached at ItemsAt (trace line ItemsLine).
	MaxItems  int
	ItemsAt   time.Duration
	ItemsLine int
	// MaxStreams is the most streams that carried one item (link seq
	// Item) without an ack covering it, first reached at StreamsAt.
	MaxStreams  int
	Item        uint64
	StreamsAt   time.Duration
	StreamsLine int
}

// CheckBacklog is the bounded backlog of relay stream links: a link holds
// at most its configured StreamBacklog items (queued plus unacknowledged),
// so no stream carries more; and a link whose acks keep failing gives its
// items up after RelayAttempts attempts (the recipients catch up from the
// log), so no item is written on more than RelayAttempts streams without
// an ack. Both are counted from outside (h.Links): a link that holds, and
// rewrites on every new stream, a backlog that grows with the messages
// sent while its peer does not acknowledge breaks one or the other.
func CheckBacklog(h *History) []Violation {
	var out []Violation
	for _, l := range h.Links {
		if l.Bound > 0 && l.MaxItems > l.Bound {
			out = append(out, Violation{Property: PropBacklog, Node: l.From, TraceLines: lines(l.ItemsLine),
				Detail: fmt.Sprintf("link %s ->%s: one stream carried %d items at t=%v, over the configured backlog bound of %d (queued plus unacknowledged)",
					l.Link, l.To, l.MaxItems, l.ItemsAt, l.Bound)})
		}
		if l.Attempts > 0 && l.MaxStreams > l.Attempts {
			out = append(out, Violation{Property: PropBacklog, Node: l.From, TraceLines: lines(l.StreamsLine),
				Detail: fmt.Sprintf("link %s ->%s: item #%d written on %d streams without an ack by t=%v, but the link gives up after %d attempts: it holds its backlog while its acks keep failing",
					l.Link, l.To, l.Item, l.MaxStreams, l.StreamsAt, l.Attempts)})
		}
	}
	return out
}

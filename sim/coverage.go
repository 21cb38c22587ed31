package sim

import (
	"maps"
	"sync"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Coverage counts how often a run met the parts of the world the suite
// widened into (issue 18), so that a sweep can say how often each showed
// up. It is filled from the run's history after the run, from outside the
// relay.
type Coverage struct {
	// NonASCIINames is how many distinct room and user names outside
	// ASCII the run's real calls used (malformed names not counted), and
	// MaxLengthNames how many of those were the longest allowed
	// (system.MaxNameLen bytes).
	NonASCIINames, MaxLengthNames int
	// NonASCIIDeliveries counts deliveries in rooms named outside ASCII,
	// and NonASCIILive the live ones among them (the relay path the x-op
	// label travels on).
	NonASCIIDeliveries, NonASCIILive int
	// BadNameCalls counts the calls that named a malformed name (empty,
	// over-long, invalid UTF-8, a control character or a space).
	BadNameCalls int
	// Steals are sends made with another user's client message id (steal
	// faults, steal.go); StealsAsMember of them were accepted (sequenced
	// as the stealer's own message) and StealsRefused refused
	// FailedPrecondition (the stealer was no member).
	Steals, StealsAsMember, StealsRefused int
	// Forgeries counts the forged calls made, by method (ForgeCalls:
	// send, join, leave, create-room, connect, relay, relay-bulk,
	// relay-stream).
	Forgeries map[string]int
	// RecvBreaks are the relay streams broken at the stream.deliver gate:
	// after the receiver read and claimed an item, before it delivered it
	// (recv-break faults and the rapid machine's breaks).
	RecvBreaks int
	// LinkBacklogPeak is the largest backlog of a relay stream link seen
	// from the wire (the most items one stream carried), and
	// LinkBacklogBound the configured bound (StreamBacklog) of that link:
	// how close a run came to the bound (see LinkBacklogRatio).
	LinkBacklogPeak, LinkBacklogBound int
	// MixedConfigs is 1 when the run's nodes did not all run the same
	// limits (MaxPayload, MaxRecipients) and protocol version at the
	// start, as during a config rollout, else 0.
	MixedConfigs int
	// OverlappingIncarnations counts restarts and upgrades whose new
	// incarnation started before the old one had finished stopping.
	OverlappingIncarnations int
	// BatchedWrites counts relay streams that carried more than one item
	// before their ack came back (counted by the stream hooks on the
	// sender's side of the wire): stream links batching.
	BatchedWrites int
	// TrafficAfterRecovery counts the sends the timely check judged with
	// no fault excuse: sent by the liveness phase once the cluster had
	// healed and settled (model.StrictSends).
	TrafficAfterRecovery int
}

// covered updates the run's coverage.
func (c *Cluster) covered(f func(*Coverage)) {
	c.coverage.mu.Lock()
	defer c.coverage.mu.Unlock()
	f(&c.coverage.cov)
}

// LinkBacklogRatio is the largest link backlog seen relative to its bound
// (0 when no stream carried an item).
func (c Coverage) LinkBacklogRatio() float64 {
	if c.LinkBacklogBound <= 0 {
		return 0
	}
	return float64(c.LinkBacklogPeak) / float64(c.LinkBacklogBound)
}

func (c *coverage) recvBreak() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cov.RecvBreaks++
}

// linkBacklog notes a link backlog of items against its bound.
func (c *coverage) linkBacklog(items, bound int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bound <= 0 {
		return
	}
	// Compare items/bound with peak/peakBound without division.
	if c.cov.LinkBacklogBound == 0 || items*c.cov.LinkBacklogBound > c.cov.LinkBacklogPeak*bound {
		c.cov.LinkBacklogPeak, c.cov.LinkBacklogBound = items, bound
	}
}

// coverage is what a cluster counts for its run's Coverage while it
// runs, from its clients' goroutines.
type coverage struct {
	mu  sync.Mutex
	cov Coverage
}

// forged counts a forged call of method call.
func (c *coverage) forged(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cov.Forgeries == nil {
		c.cov.Forgeries = map[string]int{}
	}
	c.cov.Forgeries[call]++
}

// stole counts a steal's outcome.
func (c *coverage) stole(ev model.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cov.Steals++
	switch {
	case ev.OK:
		c.cov.StealsAsMember++
	case ev.Err == "FailedPrecondition":
		c.cov.StealsRefused++
	}
}

// snapshot returns a copy of the counts.
func (c *coverage) snapshot() Coverage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.cov
	out.Forgeries = maps.Clone(c.cov.Forgeries)
	return out
}

// countNames fills the name counters from h.
func (cv *Coverage) countNames(h *model.History) {
	seen := map[string]bool{}
	note := func(kind, s string) {
		if NonASCII(s) && !seen[kind+s] {
			seen[kind+s] = true
			cv.NonASCIINames++
			if len(s) == system.MaxNameLen {
				cv.MaxLengthNames++
			}
		}
	}
	for _, ev := range h.Events {
		switch {
		case model.IsBadName(ev.Kind):
			cv.BadNameCalls++
		case ev.Kind == model.KindCreateRoom, ev.Kind == model.KindJoin, ev.Kind == model.KindSend, ev.Kind == model.KindConnect:
			note("user ", ev.User)
			note("room ", ev.Room)
		}
	}
	h.EachDelivery(func(ev model.Event) {
		if NonASCII(ev.Room) {
			cv.NonASCIIDeliveries++
			if !ev.FromLog {
				cv.NonASCIILive++
			}
		}
	})
}

// CoverageItem is one count of the coverage line.
type CoverageItem struct {
	Name  string
	Count int
}

// Items lists the coverage counts by name, in a fixed order: the per-run
// coverage line, the summary line's "coverage" and the sweep's tally
// (how many runs met each) read them.
func (c Coverage) Items() []CoverageItem {
	forged := 0
	for _, n := range c.Forgeries {
		forged += n
	}
	return []CoverageItem{
		{"non-ascii-names", c.NonASCIINames},
		{"longest-names", c.MaxLengthNames},
		{"non-ascii-live", c.NonASCIILive},
		{"bad-name-calls", c.BadNameCalls},
		{"steals", c.Steals},
		{"steals-as-member", c.StealsAsMember},
		{"forged-calls", forged},
		{"forged-methods", len(c.Forgeries)},
		{"recv-breaks", c.RecvBreaks},
		{"mixed-configs", c.MixedConfigs},
		{"overlapping-incarnations", c.OverlappingIncarnations},
		{"batched-writes", c.BatchedWrites},
		{"traffic-after-recovery", c.TrafficAfterRecovery},
		{"backlog-over-half", btoi(2*c.LinkBacklogPeak > c.LinkBacklogBound && c.LinkBacklogBound > 0)},
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

package sim

import "sync"

// Coverage counts how often a run showed the worlds the generator widened
// to (issue 18): what the per-run coverage line reports across a sweep.
// It is filled during the run by the harness and reachable as
// Result.Coverage.
type Coverage struct {
	// RecvBreaks are the relay streams broken at the stream.deliver gate:
	// after the receiver read and claimed an item, before it delivered it
	// (recv-break faults and the rapid machine's breaks).
	RecvBreaks int
	// LinkBacklogPeak is the largest backlog of a relay stream link seen
	// from the wire (the most items one stream carried), and
	// LinkBacklogBound the configured bound (StreamBacklog) of that link:
	// how close a run came to the bound (see LinkBacklogRatio).
	LinkBacklogPeak, LinkBacklogBound int
}

// LinkBacklogRatio is the largest link backlog seen relative to its bound
// (0 when no stream carried an item).
func (c Coverage) LinkBacklogRatio() float64 {
	if c.LinkBacklogBound <= 0 {
		return 0
	}
	return float64(c.LinkBacklogPeak) / float64(c.LinkBacklogBound)
}

// coverage is the run's Coverage while it runs.
type coverage struct {
	mu sync.Mutex
	c  Coverage
}

func (v *coverage) recvBreak() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.c.RecvBreaks++
}

// linkBacklog notes a link backlog of items against its bound.
func (v *coverage) linkBacklog(items, bound int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if bound <= 0 {
		return
	}
	// Compare items/bound with peak/peakBound without division.
	if v.c.LinkBacklogBound == 0 || items*v.c.LinkBacklogBound > v.c.LinkBacklogPeak*bound {
		v.c.LinkBacklogPeak, v.c.LinkBacklogBound = items, bound
	}
}

func (v *coverage) get() Coverage {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.c
}

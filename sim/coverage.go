package sim

import "sync"

// Coverage counts how often a run showed the worlds the suite widened to
// (issue 18): each counter is filled from outside the relay while the run
// goes, and read as Result.Coverage.
type Coverage struct {
	// BatchedWrites counts relay streams that carried more than one item
	// before their ack came back (counted by the stream hooks on the
	// sender's side of the wire): stream links batching.
	BatchedWrites int
	// TrafficAfterRecovery counts the sends the timely check judged with
	// no fault excuse: sent by the liveness phase once the cluster had
	// healed and settled (model.StrictSends).
	TrafficAfterRecovery int
}

// coverage guards a run's Coverage while the run fills it.
type coverage struct {
	mu sync.Mutex
	c  Coverage
}

// covered updates the run's coverage.
func (c *Cluster) covered(f func(*Coverage)) {
	c.cov.mu.Lock()
	defer c.cov.mu.Unlock()
	f(&c.cov.c)
}

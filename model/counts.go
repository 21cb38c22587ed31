package model

// Counts are a run's headline numbers: the run's printed summary and its
// timeline page's header both show them, from CountsOf alone, so that the
// two never tell one run two ways.
type Counts struct {
	// Users is how many users the run's actions name (a story's own users,
	// not the harness's default).
	Users int
	// Acked is how many ordinary sends (not steals) the history records as
	// acked.
	Acked int
	// Deliveries is how many deliveries the history records: Live pushed
	// live, FromLog replayed or gap-filled from the room log.
	Deliveries, Live, FromLog int
	// Faults is how many faults the harness injected. One fault the history
	// records may be several injections (a partition, then its heal), and
	// an injection may leave no record of its own.
	Faults int
}

// CountsOf counts h (nil: nothing happened) for a run whose actions name
// users users and whose harness injected injected faults.
func CountsOf(h *History, users, injected int) Counts {
	n := Counts{Users: users, Faults: injected}
	if h == nil {
		return n
	}
	for _, e := range h.Events {
		if e.Kind == KindSend && e.OK && !e.Steal {
			n.Acked++
		}
	}
	n.Live, n.FromLog = DeliveryCounts(h)
	n.Deliveries = n.Live + n.FromLog
	return n
}

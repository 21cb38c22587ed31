package sim

import "sync"

// Coverage says how often a run showed the parts of the world that the
// sweep's coverage line reports (each helper of issue 18 adds its own).
type Coverage struct {
	// Forgeries counts the forged calls made, by method (ForgeCalls:
	// send, join, leave, create-room, connect, relay, relay-bulk,
	// relay-stream).
	Forgeries map[string]int
}

// coverage is what a cluster counts for its run's Coverage, from the
// goroutines of its clients.
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

// snapshot returns a copy of the counts.
func (c *coverage) snapshot() Coverage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Coverage{}
	if c.cov.Forgeries != nil {
		out.Forgeries = make(map[string]int, len(c.cov.Forgeries))
		for k, v := range c.cov.Forgeries {
			out.Forgeries[k] = v
		}
	}
	return out
}

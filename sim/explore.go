package sim

import (
	"testing"
	"time"
)

// TinyConfig is a configuration small enough for the exhaustive scheduler:
// 2 nodes, 2 users in one room, about two messages, no faults, a short drain.
func TinyConfig() Config {
	c := DefaultConfig()
	c.Nodes, c.Users, c.Rooms, c.RoomsPerUser = 2, 2, 1, 1
	c.Duration, c.Drain = 600*time.Millisecond, 2*time.Second
	c.Rate, c.Churn, c.Tick = 2, 0, 100*time.Millisecond
	c.Bounds = NoFaults()
	c.Scheduler = "exhaustive"
	return c
}

// Explore runs cfg under the exhaustive scheduler, one schedule after
// another (depth-first over every pick), until every schedule within the
// preemption bound has run, a run fails (it stops at the first violation),
// or limit schedules have run. It returns the last run and the number of
// schedules explored, and whether the space was exhausted.
func Explore(t *testing.T, cfg Config, bound, limit int) (res *Result, explored int, complete bool) {
	e := &Exhaustive{Bound: bound}
	cfg.Exhaustive = e
	cfg.Scheduler = "exhaustive"
	for {
		res = Run(t, cfg)
		explored++
		if res.Failed() {
			return res, explored, false
		}
		if !e.Next() {
			return res, explored, true
		}
		if explored >= limit {
			return res, explored, false
		}
	}
}

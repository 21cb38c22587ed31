package dst

import (
	"sort"
	"time"
)

// CostFunc says what work an op does when it runs: the resource it uses
// (a node's CPU, a database's core; "" for none), how many cores that
// resource has, and for how long the op holds one. The harness supplies
// it: the kernel does not know what the ops are.
type CostFunc func(op *Op) (resource string, cores int, d time.Duration)

// Resources is the contended half of a cost model. Compute takes no
// virtual time, so work is given a cost explicitly (CostFunc): an op that
// does work on a resource holds one of its cores for its cost and, when
// every core is busy, waits for the earliest one to free up, first booked
// first served.
//
// Determinism: a resource is never booked when an op arrives at its gate
// (goroutines arrive in any order). It is booked by the driver, when the
// scheduler picks the op (Scheduler.step runs in key and strategy order):
// the op is re-parked until its work is done, like a delayed op, and
// released when it is picked again at that time. Only the driver touches
// a Resources.
type Resources struct {
	cost CostFunc
	free map[string][]time.Duration // per resource, when each core is next free
	busy map[string]time.Duration   // per resource, work booked so far
	// maxWait is the longest an op waited for a free core (booked at
	// now, started later): the contention the run met.
	maxWait time.Duration
}

// NewResources returns idle resources whose ops cost what cost says.
func NewResources(cost CostFunc) *Resources {
	return &Resources{cost: cost, free: map[string][]time.Duration{}, busy: map[string]time.Duration{}}
}

// book books op's work on the earliest free core of its resource at or
// after now and re-parks op until the work is done; it reports whether it
// did. An op already booked (picked again once done) is not booked again.
func (r *Resources) book(s *Scheduler, op *Op, now time.Duration) bool {
	if op.booked {
		return false
	}
	res, cores, d := r.cost(op)
	if res == "" || d <= 0 || cores <= 0 {
		return false
	}
	free := r.free[res]
	if free == nil {
		free = make([]time.Duration, cores)
		r.free[res] = free
	}
	c := 0
	for i := range free {
		if free[i] < free[c] {
			c = i
		}
	}
	start := max(now, free[c])
	r.maxWait = max(r.maxWait, start-now)
	end := start + d
	free[c] = end
	r.busy[res] += d
	s.lock <- struct{}{}
	op.ReadyAt, op.booked = end, true
	<-s.lock
	return true
}

// Busy returns the work booked per resource so far, sorted by resource.
func (r *Resources) Busy() []ResourceBusy {
	out := make([]ResourceBusy, 0, len(r.busy))
	for k, v := range r.busy {
		out = append(out, ResourceBusy{Resource: k, Busy: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// MaxWait is the longest any op has waited for a core of its resource.
func (r *Resources) MaxWait() time.Duration { return r.maxWait }

// ResourceBusy is one resource's booked work.
type ResourceBusy struct {
	Resource string
	Busy     time.Duration
}

// Iterative bounding (CHESS): the search at preemption bound 0, then 1,
// 2, ..., each a whole search of its own, until a bound finds a violation
// (the smallest bound at which one appears), the top bound is done, a
// bound refused nothing (every higher bound runs the same schedules), or
// the schedule budget runs out.

package dst

import "fmt"

// BoundRun is one bound's search of an iteration.
type BoundRun struct {
	Bound      int
	Schedules  int
	Violations int // failing schedules
	Exhausted  bool
	// StoppedBy says why the search stopped before it was exhausted
	// ("limit", "time", ...; "" when it was not stopped).
	StoppedBy string
	// Refused counts what the bound left out: choices cut by it
	// (Explorer.BoundHit) and default picks it held back
	// (Explorer.BoundHeld). Zero: a higher bound runs the same schedules.
	Refused int
}

// Iteration is what iterating the bound found.
type Iteration struct {
	Runs []BoundRun
	// Smallest is the smallest bound with a violation (-1: none).
	Smallest int
	// End says why the iteration ended: "violation", "top" (the top
	// bound was searched), "saturated" (a bound refused nothing),
	// "stopped" (a search was stopped: the budget or the caller).
	End string
}

// IterateBounds runs search at bound 0, 1, ... up to top (< 0: no top),
// stopping at the first bound whose search finds a violation or is
// stopped, or that refused nothing. limit, when > 0, is the schedules of
// the whole iteration: each search gets what the ones before it left
// (search's limit argument; 0: none). The schedules of a bound's search
// are not skipped at the next bound: a bound-k search runs again the
// schedules of bound k-1 that it reaches.
func IterateBounds(top, limit int, search func(bound, limit int) BoundRun) Iteration {
	it := Iteration{Smallest: -1}
	used := 0
	for b := 0; ; b++ {
		left := 0
		if limit > 0 {
			if left = limit - used; left <= 0 { // spent exactly by the bounds before
				it.Runs, it.End = append(it.Runs, BoundRun{Bound: b, StoppedBy: "limit"}), "stopped"
				return it
			}
		}
		r := search(b, left)
		r.Bound = b
		used += r.Schedules
		it.Runs = append(it.Runs, r)
		switch {
		case r.Violations > 0:
			it.Smallest, it.End = b, "violation"
		case r.StoppedBy != "":
			it.End = "stopped"
		case top >= 0 && b >= top:
			it.End = "top"
		case r.Refused == 0:
			it.End = "saturated"
		}
		if it.End != "" {
			return it
		}
	}
}

// Summary is the iteration's verdict in one line: the smallest bound at
// which a violation appears, or the bounds that found none and whether
// each was exhausted.
func (it Iteration) Summary() string {
	last := it.Runs[len(it.Runs)-1]
	var ex string
	for i, r := range it.Runs {
		if i > 0 {
			ex += " "
		}
		ex += fmt.Sprintf("%d=%s", r.Bound, map[bool]string{true: "yes", false: "no"}[r.Exhausted])
	}
	switch it.End {
	case "violation":
		if last.Bound == 0 {
			return "smallest bound with a violation: 0"
		}
		return fmt.Sprintf("smallest bound with a violation: %d (no violation at %s, exhausted: %s)", last.Bound, boundsUpTo(last.Bound-1), trimLast(ex))
	case "saturated":
		return fmt.Sprintf("no violation at %s (exhausted: %s); bound %d refused nothing, so every higher bound runs the same schedules", boundsUpTo(last.Bound), ex, last.Bound)
	case "stopped":
		return fmt.Sprintf("no violation at %s (exhausted: %s); bound %d was stopped (%s)", boundsUpTo(last.Bound), ex, last.Bound, last.StoppedBy)
	default:
		return fmt.Sprintf("no violation at %s (exhausted: %s)", boundsUpTo(last.Bound), ex)
	}
}

// boundsUpTo names bounds 0..k ("bound 0" alone).
func boundsUpTo(k int) string {
	if k == 0 {
		return "bound 0"
	}
	return fmt.Sprintf("bounds 0..%d", k)
}

// trimLast drops the last "b=x" of an exhausted list (the violating
// bound's, which Summary names apart).
func trimLast(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' {
			return s[:i]
		}
	}
	return s
}

// Fallback is a search that could not finish followed by sampled
// schedules (a Sampler): its report line never says exhausted.
type Fallback struct {
	// StoppedAt is the schedules the search ran before it was stopped.
	StoppedAt int
	// Sampled are the schedules the sampler drew after it, Violations
	// the failing ones among them.
	Sampled, Violations int
	Depth               int
	Seed                Seed
}

func (f Fallback) String() string {
	return fmt.Sprintf("not exhausted: the search was stopped at %d schedules; PCT sampled %d more schedules (depth %d, seed %s): violations %d",
		f.StoppedAt, f.Sampled, f.Depth, f.Seed, f.Violations)
}

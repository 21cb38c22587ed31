// Race analysis and backtracking (explore.go describes the search): after
// each run, Next finds the races of its events and the fault alternatives
// of its releases, adds the choices that reverse them to the backtrack
// sets within the bound and budgets, and picks the next prefix to run.

package dst

import (
	"sort"
)

// Next analyses the run that just ended and prepares the next one; false
// when the search is exhausted (or a replay is done).
func (e *Explorer) Next() bool {
	e.armed = false
	if e.Replay != nil {
		return false
	}
	if e.Sample != nil {
		// Sampling: no race analysis, no backtracking; the caller counts
		// the schedules (Sampler says what it drew).
		e.Sample.end(e.depth)
		return true
	}
	e.analyse()
	for d := len(e.tree) - 1; d >= 0; d-- {
		l := e.tree[d]
		for _, c := range sortedKeys(l.backtrack) {
			if l.done[c] {
				continue
			}
			if _, asleep := l.sleep[c]; asleep && e.Reduce {
				continue
			}
			e.tree = e.tree[:d+1]
			e.prefix = make([]string, 0, d+1)
			for _, p := range e.tree[:d] {
				e.prefix = append(e.prefix, p.chosen)
			}
			e.prefix = append(e.prefix, c)
			return true
		}
	}
	e.tree = nil
	return false
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// add puts choice c into the backtrack set of level d if the bound and the
// budgets allow it there; it reports whether it did.
func (e *Explorer) add(d int, c string) bool {
	l := e.tree[d]
	if l.backtrack[c] || l.done[c] {
		return true
	}
	if e.DepthBudget > 0 && d >= e.DepthBudget {
		e.DepthHit++
		return false
	}
	if cls := l.classOf(c); cls != "" && l.faults[cls] >= e.Budget[cls] {
		if e.Budget[cls] > 0 {
			e.BudgetHit++ // a class with no budget is off, not cut
			if e.BudgetHitBy == nil {
				e.BudgetHitBy = map[string]int{}
			}
			e.BudgetHitBy[cls]++
		}
		return false
	}
	key, _ := splitChoice(c)
	ci, _ := l.info(key)
	if !ci.lazy && len(l.chain) > 0 && !l.chain[key] && e.Bound >= 0 && l.preempt >= e.Bound {
		e.BoundHit++
		return false
	}
	l.backtrack[c] = true
	return true
}

// analyse finds the races of the run that just ended and adds the choices
// that reverse them, plus the fault alternatives of every release.
func (e *Explorer) analyse() {
	n := len(e.events)
	if e.blocked >= 0 {
		// A redundant run: only what happened before it blocked counts.
		for i, ev := range e.events {
			if ev.level >= e.blocked {
				n = i
				break
			}
		}
	}
	evs := e.events[:n]
	// Faults as choices: at each level, every fault the executed op
	// offers, and every lazy op (a crash) dependent with what ran there.
	for i, ev := range evs {
		if ev.level < 0 {
			continue
		}
		l := e.tree[ev.level]
		key, f := splitChoice(ev.choice)
		if ci, ok := l.info(key); ok && f == "" && !ci.lazy && ev.choice != tick {
			for _, fault := range ci.faults {
				e.add(ev.level, faultChoice(key, fault))
			}
			if ci.delay {
				e.add(ev.level, faultChoice(key, "delay"))
			}
		}
		for _, ci := range l.enabled {
			if ci.lazy && ci.key != key && (!e.Reduce || ev.all || Dependent(ci.touch, evs[i].touch)) {
				e.add(ev.level, ci.key)
			}
		}
		if !e.Reduce {
			for _, ci := range l.enabled {
				if !ci.lazy {
					e.add(ev.level, ci.key)
				}
			}
		}
	}
	if !e.Reduce {
		return
	}
	// An op parked at a level that never runs afterwards was disabled (a
	// crash held it, or the horizon came first): no race with it is ever
	// seen, so the event that may have disabled it is reversed with it
	// here, when they are dependent (persistence does not hold).
	ran := map[uint64]int{} // op instance -> its last level
	for _, ev := range evs {
		if ev.inst != 0 && ev.level >= 0 {
			ran[ev.inst] = ev.level
		}
	}
	for _, ev := range evs {
		if ev.level < 0 || ev.all {
			continue
		}
		l := e.tree[ev.level]
		for _, ci := range l.enabled {
			if ci.lazy || ci.key == ev.key {
				continue
			}
			if last, ok := ran[ci.inst]; ok && last > ev.level {
				continue
			}
			if Dependent(ci.touch, ev.touch) {
				e.add(ev.level, ci.key)
			}
		}
	}
	// Happens-before: parent, the same op instance's earlier event, the last
	// barrier, and every earlier dependent event. reach[j] holds the
	// events before j in happens-before.
	words := (n + 63) / 64
	reach := make([][]uint64, n)
	lastBarrier := -1
	for j := 0; j < n; j++ {
		r := make([]uint64, words)
		join := func(k int) {
			if k < 0 || k >= j {
				return
			}
			r[k/64] |= 1 << (k % 64)
			for w := range reach[k] {
				r[w] |= reach[k][w]
			}
		}
		ev := evs[j]
		join(ev.parent)
		join(ev.prev)
		join(lastBarrier)
		if ev.all {
			for k := 0; k < j; k++ {
				join(k)
			}
			lastBarrier = j
		} else {
			for k := lastBarrier + 1; k < j; k++ {
				if Dependent(evs[k].touch, ev.touch) {
					join(k)
				}
			}
		}
		reach[j] = r
	}
	has := func(set []uint64, k int) bool { return set[k/64]&(1<<(k%64)) != 0 }
	barrierBefore := make([]int, n) // the last barrier before each event
	for j, b := 0, -1; j < n; j++ {
		barrierBefore[j] = b
		if evs[j].all {
			b = j
		}
	}
	for j := 0; j < n; j++ {
		ej := evs[j]
		if ej.all || ej.level < 0 {
			continue
		}
		// The direct predecessors of j other than a candidate i: a race
		// (i, j) is a dependent pair with no other path from i to j.
		var preds []int
		for _, k := range []int{ej.parent, ej.prev} {
			if k >= 0 && k < j {
				preds = append(preds, k)
			}
		}
		for i := j - 1; i > barrierBefore[j]; i-- {
			ei := evs[i]
			if ei.all || ei.level < 0 || !Dependent(ei.touch, ej.touch) {
				continue
			}
			if i == ej.parent || i == ej.prev {
				continue
			}
			covered := false
			for _, k := range preds {
				if has(reach[k], i) {
					covered = true
					break
				}
			}
			if !covered {
				for k := i + 1; k < j; k++ {
					if has(reach[k], i) && has(reach[j], k) {
						covered = true
						break
					}
				}
			}
			if covered {
				continue
			}
			e.reverse(evs, i, j)
		}
	}
}

// reverse adds, at the level of event i, a choice that starts the reversed
// race: j's own op if it was parked there, else the ancestor of j that
// was; failing both, everything parked there (Flanagan–Godefroid).
func (e *Explorer) reverse(evs []event, i, j int) {
	li := evs[i].level
	l := e.tree[li]
	c := ""
	for k := j; k > i; {
		ek := evs[k]
		// The same op instance: parked at li (created before i) by the
		// event that parked ek's op.
		if ci, ok := l.info(ek.key); ok && ci.parent == ek.parent && ek.parent < i {
			c = ek.choice
			if k != j {
				c = ek.key // an ancestor starts plainly
			}
			break
		}
		next := ek.parent
		if ek.prev > next {
			next = ek.prev
		}
		if next <= i {
			break
		}
		k = next
	}
	var cands []string
	if c != "" && e.Bound >= 0 {
		e.addFree(evs, i, j)
	}
	if c != "" {
		cands = []string{c}
	} else {
		for _, ci := range l.enabled {
			if !ci.lazy {
				cands = append(cands, ci.key)
			}
		}
	}
	for _, c := range cands {
		e.add(li, c)
	}
	if e.Bound < 0 {
		return
	}
	// BPOR: the reversal may need the switch made earlier, where the chain
	// this event continued began (it costs no more there); add it at that
	// switch point too.
	if c != "" {
		e.addAtSwitch(evs, i, j)
		return
	}
	if k := e.switchPoint(evs, i); k >= 0 && k != i {
		sw := evs[k].level
		for _, c := range cands {
			if _, parked := e.tree[sw].info(c); parked {
				e.add(sw, c)
			}
		}
	}
}

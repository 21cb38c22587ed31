// The preemption bound made sound for the reduction, as BPOR (Coons,
// Musuvathi and McKinley 2013) does it: where a reversal that the bound
// may refuse at its own level is also added, for free, earlier.

package dst

// startOf is the choice at the level of event s that starts j's side of
// a reversal: j's own op if that very instance was parked there, else the
// ancestor of j that was ("" when none was).
func (e *Explorer) startOf(evs []event, s, j int) string {
	l := e.tree[evs[s].level]
	for k := j; k > s; {
		ek := evs[k]
		if ci, ok := l.info(ek.key); ok && ci.parent == ek.parent && ek.parent < s {
			if k != j {
				return ek.key // an ancestor starts plainly
			}
			return ek.choice
		}
		next := max(ek.parent, ek.prev)
		if next <= s {
			break
		}
		k = next
	}
	return ""
}

// addFree is BPOR's conservative point, for causal chains: under a bound,
// reversing the race (i, j) at i's level may cost a preemption the bound
// does not allow, while an earlier level offered j's side for free (the
// chain was empty there, or j's side was one of several continuations of
// it). The latest such level before i gets j's side too.
func (e *Explorer) addFree(evs []event, i, j int) {
	for s := i - 1; s >= 0; s-- {
		es := evs[s]
		if es.all {
			return
		}
		if es.level < 0 {
			continue
		}
		c := e.startOf(evs, s, j)
		if c == "" {
			continue
		}
		l := e.tree[es.level]
		key, _ := splitChoice(c)
		if ci, _ := l.info(key); ci.lazy || len(l.chain) == 0 || l.chain[key] {
			if l.chosen != c {
				e.add(es.level, c)
			}
			return
		}
	}
}

// switchPoint is the latest event at or before i that did not continue
// the chain (BPOR's block start: the last context switch before i, where
// starting another side costs no more than it did), or -1. An event
// continues the chain when its op was the chain's continuation at its
// level — not merely when its parent is the event before it: a sibling
// (two ops parked by one event) has that parent too, and starting it was
// a preemption, so its block begins there.
func (e *Explorer) switchPoint(evs []event, i int) int {
	for k := i; k >= 0; k-- {
		ev := evs[k]
		if ev.level < 0 {
			continue
		}
		if k == 0 || !e.tree[ev.level].chain[ev.key] {
			return k
		}
	}
	return -1
}

// addAtSwitch is BPOR's conservative point for the race (i, j): j's side
// is started where i's block began, at no more cost than at i's level. If
// neither j's op nor an ancestor was parked there yet (the block created
// it: a spawn, a message), at the first level of the block where one is —
// every level of a block has spent the same preemptions.
func (e *Explorer) addAtSwitch(evs []event, i, j int) {
	k := e.switchPoint(evs, i)
	if k < 0 || k == i {
		return
	}
	for m := k; m < i; m++ {
		if evs[m].level < 0 {
			continue
		}
		if c := e.startOf(evs, m, j); c != "" {
			e.add(evs[m].level, c)
			return
		}
	}
}

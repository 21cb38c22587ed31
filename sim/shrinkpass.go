// The shrinker's passes, one a stage (shrink.go runs them in order):
// each proposes smaller candidates of the current run (fewer users,
// actions, bursts, faults, shorter faults, a lower mix, fewer nodes or
// channels, a shorter run, first-pick schedule) through shrinker.try,
// with the fault grouping and delta debugging (ddmin) they share.

package sim

import (
	"slices"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/plan"
)

// users drops whole users: their actions and the faults naming them.
func (s *shrinker) users(stage string) {
	base := s.cur
	users := usersOf(base.Actions)
	ddmin(len(users), func(keep []int) bool {
		if len(keep) == 0 {
			return false
		}
		kept := map[string]bool{}
		for _, i := range keep {
			kept[users[i]] = true
		}
		c := base
		c.Actions = filter(c.Actions, func(a Action) bool { return kept[a.User] })
		c.Faults = filter(c.Faults, func(f Fault) bool { return f.User == "" || kept[f.User] })
		return s.try(stage, c)
	}, s.out)
}

// actions drops chunks of actions, then single ones. At least one is
// kept: an empty Config.Actions means the generated workload.
func (s *shrinker) actions(stage string) {
	base := s.cur
	ddmin(len(base.Actions), func(keep []int) bool {
		if len(keep) == 0 {
			return false
		}
		c := base
		c.Actions = pick(base.Actions, keep)
		return s.try(stage, c)
	}, s.out)
}

// bursts shortens what lasts: slow reads (each For halved, once) and
// padded payloads (unpadded).
func (s *shrinker) bursts(stage string) {
	for i, a := range s.cur.Actions {
		if a.Kind == ActSlow && a.For > time.Millisecond {
			c := s.cur
			c.Actions = slices.Clone(c.Actions)
			c.Actions[i].For = a.For / 2
			s.try(stage, c)
		}
	}
	if slices.ContainsFunc(s.cur.Actions, func(a Action) bool { return a.Size > 0 }) {
		c := s.cur
		c.Actions = slices.Clone(c.Actions)
		for i := range c.Actions {
			c.Actions[i].Size = 0
		}
		s.try(stage, c)
	}
}

// faults drops timed faults, a crash with its restart, a partition with
// its heal and a blip with its end.
func (s *shrinker) faults(stage string) {
	groups := faultGroups(s.cur.Faults)
	base := s.cur
	ddmin(len(groups), func(keep []int) bool {
		c := base
		c.Faults = []Fault{}
		for _, g := range keep {
			for _, i := range groups[g] {
				c.Faults = append(c.Faults, base.Faults[i])
			}
		}
		sortFaults(c.Faults)
		return s.try(stage, c)
	}, s.out)
}

// faultLengths halves each fault's span while it still fails (at most
// three times; a paired fault's end moves with it).
func (s *shrinker) faultLengths(stage string) {
	for g := 0; g < len(faultGroups(s.cur.Faults)); g++ {
		for range 3 {
			groups := faultGroups(s.cur.Faults)
			if g >= len(groups) {
				return
			}
			head := s.cur.Faults[groups[g][0]]
			if head.For <= time.Millisecond {
				break
			}
			c := s.cur
			c.Faults = slices.Clone(c.Faults)
			d := (head.For / 2).Truncate(time.Millisecond)
			c.Faults[groups[g][0]].For = d
			if len(groups[g]) == 2 {
				c.Faults[groups[g][1]].At = head.At + d
			}
			sortFaults(c.Faults)
			if !s.try(stage, c) {
				break
			}
		}
	}
}

// mix turns each per-operation fault rate off in turn.
func (s *shrinker) mix(stage string) {
	for _, rate := range plan.OpRates() {
		if s.cur.Mix == nil || *rate(s.cur.Mix) == 0 {
			continue
		}
		m := *s.cur.Mix
		*rate(&m) = 0
		c := s.cur
		c.Mix = &m
		s.try(stage, c)
	}
}

// nodes tries the smallest cluster first: what names a removed node
// names node Node mod n instead; a partition or blip whose two sides
// become one node is dropped with its end.
func (s *shrinker) nodes(stage string) {
	for n := 1; n < s.cur.Nodes; n++ {
		if s.try(stage, onNodes(s.cur, n)) {
			return
		}
	}
}

func onNodes(c Config, n int) Config {
	c.Nodes = n
	c.Actions = slices.Clone(c.Actions)
	for i := range c.Actions {
		c.Actions[i].Node %= n
	}
	fs := []Fault{}
	for _, g := range faultGroups(c.Faults) {
		var kept []Fault
		for _, i := range g {
			f := c.Faults[i]
			f.Node %= n
			if f.Peer > 0 {
				f.Peer %= n
			}
			f.Forge.Node %= n
			f.Steal.Node %= n
			if (f.Kind == model.FaultPartition || f.Kind == model.FaultHeal || f.Kind == model.FaultBlip) && f.Peer == f.Node {
				kept = nil
				break
			}
			kept = append(kept, f)
		}
		fs = append(fs, kept...)
	}
	sortFaults(fs)
	c.Faults = fs
	if len(c.Versions) > n {
		c.Versions = c.Versions[:n]
	}
	return c
}

// channels tries one gRPC connection per peer.
func (s *shrinker) channels(stage string) {
	if s.cur.ChannelsPerPeer != 1 {
		c := s.cur
		c.ChannelsPerPeer = 1
		s.try(stage, c)
	}
}

// duration ends the load phase just after the last action and the last
// fault's end, to the next second (the drain is kept: liveness is judged
// after it, as before).
func (s *shrinker) duration(stage string) {
	var end time.Duration
	for _, a := range s.cur.Actions {
		end = max(end, a.At+a.For)
	}
	for _, f := range s.cur.Faults {
		end = max(end, f.At+f.For)
	}
	end = (end + time.Second).Truncate(time.Second)
	if end < s.cur.Duration {
		c := s.cur
		c.Duration = end
		s.try(stage, c)
	}
}

// schedule tries the first-pick schedule (scheduler "first"): every
// ready op in key order, none delayed.
func (s *shrinker) schedule(stage string) {
	if s.opt.KeepSchedule || s.cur.Scheduler == "first" || s.cur.Scheduler == "exhaustive" || s.cur.Chooser != nil {
		return
	}
	c := s.cur
	c.Scheduler = "first"
	s.try(stage, c)
}

// faultGroups groups the indices of fs: a crash with its restart, a
// partition with its heal and a blip with its end; every other fault
// alone. Groups are in the order of their first fault.
func faultGroups(fs []Fault) [][]int {
	used := make([]bool, len(fs))
	var out [][]int
	for i, f := range fs {
		if used[i] {
			continue
		}
		used[i] = true
		g := []int{i}
		if end := endKind(f); end != "" {
			for j := i + 1; j < len(fs); j++ {
				e := fs[j]
				if !used[j] && e.Kind == end && e.Node == f.Node && (end == model.FaultRestart || e.Peer == f.Peer) &&
					(f.Kind != model.FaultBlip || e.End) && e.At == f.At+f.For {
					used[j] = true
					g = append(g, j)
					break
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// endKind is the kind of the fault that ends f ("": none of its own).
func endKind(f Fault) model.FaultKind {
	switch {
	case f.Kind == model.FaultCrash:
		return model.FaultRestart
	case f.Kind == model.FaultPartition:
		return model.FaultHeal
	case f.Kind == model.FaultBlip && !f.End:
		return model.FaultBlip
	}
	return ""
}

func sortFaults(fs []Fault) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
}

func filter[T any](xs []T, keep func(T) bool) []T {
	out := []T{}
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func pick[T any](xs []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, xs[i])
	}
	return out
}

// ddmin is Zeller's delta debugging, complements only: it cuts n items
// into chunks, tries keeping all but one chunk, keeps the first such
// complement that still fails (test says so; test keeps what it passes as
// its new current set) and otherwise halves the chunks, down to single
// items. keep lists the kept items' indices, ascending. stop ends it early.
func ddmin(n int, test func(keep []int) bool, stop func() bool) {
	cur := make([]int, n)
	for i := range cur {
		cur[i] = i
	}
	k := 2
	for len(cur) >= 2 && !stop() {
		k = min(k, len(cur))
		size := (len(cur) + k - 1) / k
		cut := false
		for start := 0; start < len(cur) && !stop(); start += size {
			rest := append(slices.Clone(cur[:start]), cur[min(start+size, len(cur)):]...)
			if test(rest) {
				cur, cut = rest, true
				k = max(k-1, 2)
				break
			}
		}
		if cut {
			continue
		}
		if k >= len(cur) {
			return
		}
		k = min(2*k, len(cur))
	}
	if len(cur) == 1 && !stop() {
		test(nil) // the last item too (test refuses what cannot be empty)
	}
}

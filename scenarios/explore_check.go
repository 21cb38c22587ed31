package scenarios

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// CommuteBaseRuns is how many random runs give the candidate pairs.
var CommuteBaseRuns = 3

// CommuteCheck tests the footprints the reduction trusts: it runs the
// story's default schedule, draws up to pairs levels with two parked ops
// the footprints call independent, and runs each pair in both orders (the
// same prefix before, lowest-key picks after). Independent ops must
// commute: both runs must go on with the same ops and end in the same
// terminal state. A difference is a wrong footprint, a silent hole in the
// reduction. It returns how many pairs it ran. Call it inside a bubble.
func CommuteCheck(setup []*datadriven.TestData, d *datadriven.TestData, mode system.Mode, def ExploreOptions, pairs int, seed uint64) (int, error) {
	probe := NewEnv(mode)
	o, steps, err := parseExplore(probe, d, def)
	if err != nil {
		return 0, err
	}
	// Base runs pick at random (from seed), so that many ops are parked at
	// once; each level of each gives the candidate pairs.
	r := rand.New(rand.NewPCG(seed, 0x636f6d6d757465))
	type cand struct {
		prefix []string
		a, b   string
	}
	var cands []cand
	for range CommuteBaseRuns {
		base := dst.NewExplorer(true, -1, o.Budget)
		base.RandomPick = r.IntN
		base.Replay = []string{}
		if _, _, _, _, _, _, err := exploreOnce(setup, steps, mode, o, base); err != nil {
			return 0, err
		}
		levels := base.Levels()
		for d, l := range levels {
			for i := range l.Keys {
				for j := i + 1; j < len(l.Keys); j++ {
					if (l.Lazy[i] && l.Lazy[j]) || dst.Dependent(l.Touches[i], l.Touches[j]) {
						continue
					}
					prefix := make([]string, 0, d)
					for _, p := range levels[:d] {
						prefix = append(prefix, p.Chosen)
					}
					cands = append(cands, cand{prefix, l.Keys[i], l.Keys[j]})
				}
			}
		}
	}
	r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	if len(cands) > pairs {
		cands = cands[:pairs]
	}
	run := func(prefix []string) (string, []string, error) {
		ex := dst.NewExplorer(true, -1, o.Budget)
		ex.LowestKey = true
		ex.Replay = prefix
		out, _, _, _, _, _, err := exploreOnce(setup, steps, mode, o, ex)
		if err == nil && ex.Divergence != nil {
			err = ex.Divergence
		}
		return out, ex.Schedule(), err
	}
	for n, c := range cands {
		prefix, d := c.prefix, len(c.prefix)
		ab := append(append([]string(nil), prefix...), c.a, c.b)
		ba := append(append([]string(nil), prefix...), c.b, c.a)
		o1, s1, err := run(ab)
		if err != nil {
			return n, fmt.Errorf("%s then %s at choice %d: %w", c.a, c.b, d+1, err)
		}
		o2, s2, err := run(ba)
		if err != nil {
			return n, fmt.Errorf("%s then %s at choice %d: %w", c.b, c.a, d+1, err)
		}
		rest1, rest2 := strings.Join(s1[d+2:], "\n"), strings.Join(s2[d+2:], "\n")
		if o1 != o2 || rest1 != rest2 {
			return n, fmt.Errorf("ops the footprints call independent do not commute at choice %d: %q and %q\n  one order ends in %s\n  the other in   %s",
				d+1, c.a, c.b, o1, o2)
		}
	}
	return len(cands), nil
}

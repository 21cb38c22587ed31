// The mix's draw: what faults a seed turns on, and how strongly.

package plan

import "math/rand/v2"

// DrawMix draws a seed's fault mix within b. Each knob draws from its own
// generator, sub(knob name) (a sub-seed of the seed's fault seed), and
// always draws, so that changing one kind's bound (turning it off, say)
// leaves every other kind's draw as it was: swarm testing switches each
// fault on or off per seed and draws its intensity.
func DrawMix(sub func(name string) *rand.Rand, b FaultBounds) FaultMix {
	var m FaultMix
	for _, f := range mixFields() {
		r := sub(f.name)
		on, u := r.IntN(2) == 1, r.Float64()
		switch {
		case f.p != nil:
			if max := *f.max(&b); max > 0 && on {
				*f.p(&m) = float64(int(u*max*1000)) / 1000
			}
		default:
			if max := *f.maxN(&b); max > 0 && on {
				*f.n(&m) = 1 + int(u*float64(max))
			}
		}
	}
	return m
}

package plan

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sub is a stand-in for a seed's sub-seeds: a generator per name.
func sub(seed uint64) func(string) *rand.Rand {
	return func(name string) *rand.Rand {
		h := fnv.New64a()
		h.Write([]byte(name))
		return rand.New(rand.NewPCG(seed, h.Sum64()))
	}
}

// TestDrawMixKnobsAreIndependent: turning one knob's bound off zeroes
// that knob and leaves every other knob's draw as it was; every knob is
// drawn within its bound.
func TestDrawMixKnobsAreIndependent(t *testing.T) {
	b := DefaultBounds()
	for seed := range uint64(50) {
		all := DrawMix(sub(seed), b)
		for _, f := range mixFields() {
			off := b
			if f.p != nil {
				assert.LessOrEqual(t, *f.p(&all), *f.max(&b), f.name)
				*f.max(&off) = 0
			} else {
				assert.LessOrEqual(t, *f.n(&all), *f.maxN(&b), f.name)
				*f.maxN(&off) = 0
			}
			got, want := DrawMix(sub(seed), off), all
			for _, g := range mixFields() {
				if g.name == f.name || (f.p != nil && g.p != nil && f.max(&off) == g.max(&off)) {
					continue // the knob turned off, and its siblings under the same bound
				}
				if g.p != nil {
					assert.Equal(t, *g.p(&want), *g.p(&got), "%s off moved %s", f.name, g.name)
				} else {
					assert.Equal(t, *g.n(&want), *g.n(&got), "%s off moved %s", f.name, g.name)
				}
			}
		}
	}
}

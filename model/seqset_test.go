package model

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// seqSet must behave as a map[uint64]bool whatever the insertion order.
func TestSeqSetIsASet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s seqSet
		ref := map[uint64]bool{}
		for range 60 {
			seq := uint64(r.IntN(40))
			if round%2 == 0 {
				seq = uint64(r.IntN(8)) + uint64(len(ref)) // mostly ascending
			}
			assert.Equal(t, !ref[seq], s.add(seq), "add %d", seq)
			ref[seq] = true
			for q := uint64(0); q < 80; q++ {
				assert.Equal(t, ref[q], s.has(q), "has %d", q)
			}
			for i := 1; i < len(s.iv); i++ {
				assert.Less(t, s.iv[i-1].hi+1, s.iv[i].lo, "intervals must be disjoint and not adjacent: %v", s.iv)
			}
		}
	}
}

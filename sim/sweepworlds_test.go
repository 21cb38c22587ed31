package sim

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSweepWorldsKeepTheirDraws: the sweep's worlds, now drawn from the
// kinds' budgets, are those the sweep drew by hand before: a rewind for
// the seeds whose "redis-rewind-sweep" draws 0 of 3, two stalls for those
// whose "stall-world" draws 0 of 2; a flag the sweep was given is left
// to it.
func TestSweepWorldsKeepTheirDraws(t *testing.T) {
	none := func(string) bool { return false }
	for s := Seed(1); s <= 300; s++ {
		var want []string
		if s.Derive("redis-rewind-sweep").Rand().IntN(3) == 0 {
			want = append(want, "-max-redis-rewinds=1")
		}
		if s.Derive("stall-world").Rand().IntN(2) == 0 {
			want = append(want, "-max-stalls=2")
		}
		got := slices.DeleteFunc(SweepWorlds(s, none), func(a string) bool {
			return a != "-max-redis-rewinds=1" && a != "-max-stalls=2"
		})
		assert.Equal(t, want, got, "seed %v", s)
		told := SweepWorlds(s, func(flag string) bool { return flag == "max-stalls" })
		assert.NotContains(t, told, "-max-stalls=2", "seed %v", s)
	}
}

package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Seed is a run's root seed. Every subsystem derives its own sub-seed from it,
// so that turning one fault off does not reshuffle the workload.
type Seed uint64

// ParseSeed reads a seed in hex (0x2a) or decimal (42).
func ParseSeed(s string) (Seed, error) {
	t := strings.TrimSpace(s)
	var (
		v   uint64
		err error
	)
	if rest, ok := strings.CutPrefix(strings.ToLower(t), "0x"); ok {
		v, err = strconv.ParseUint(rest, 16, 64)
	} else {
		v, err = strconv.ParseUint(t, 10, 64)
	}
	if err != nil || t == "" {
		return 0, fmt.Errorf("malformed seed %q: want hex (0x2a) or decimal (42)", s)
	}
	return Seed(v), nil
}

func (s Seed) String() string { return fmt.Sprintf("0x%x", uint64(s)) }

// Derive returns the sub-seed of the named subsystem.
func (s Seed) Derive(name string) Seed {
	return Seed(mix(uint64(s) ^ hashString(name)))
}

// Rand returns a generator seeded from s.
func (s Seed) Rand() *rand.Rand {
	return rand.New(rand.NewPCG(uint64(s), mix(uint64(s)+0x9e3779b97f4a7c15)))
}

// Unit maps (s, key) to a float in [0, 1): a decision that depends on the
// operation's identity only, not on when it happened to arrive.
func (s Seed) Unit(key string) float64 {
	return float64(mix(uint64(s)^hashString(key))>>11) / (1 << 53)
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// mix is SplitMix64's finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

package dst

import (
	"errors"
	"fmt"
	"math/rand/v2"
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
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("seed %q is out of range: a seed is 64 bits, at most 0xffffffffffffffff (18446744073709551615)", s)
	}
	if err != nil || t == "" {
		return 0, fmt.Errorf("malformed seed %q: want hex (0x2a) or decimal (42)", s)
	}
	return Seed(v), nil
}

func (s Seed) String() string { return fmt.Sprintf("0x%x", uint64(s)) }

// Derive returns the sub-seed of the named subsystem.
func (s Seed) Derive(name string) Seed {
	return Seed(mix(uint64(s) ^ HashString(name)))
}

// Rand returns a generator seeded from s.
func (s Seed) Rand() *rand.Rand {
	return rand.New(rand.NewPCG(uint64(s), mix(uint64(s)+0x9e3779b97f4a7c15)))
}

// Unit maps (s, key) to a float in [0, 1): a decision that depends on the
// operation's identity only, not on when it happened to arrive.
func (s Seed) Unit(key string) float64 {
	return float64(mix(uint64(s)^HashString(key))>>11) / (1 << 53)
}

// HashString is FNV-1a (hash/fnv's New64a), inlined: no hasher and no
// []byte copy per call (it runs for every gated op's latency).
func HashString(s string) uint64 { return fnv1a(fnvOffset, s) }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnv1a continues an FNV-1a hash h over s: fnv1a(fnv1a(fnvOffset, a), b)
// equals HashString(a + b).
func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// Unit3 is s.Unit(a + "|" + b + "|" + c) without building the string (it
// runs for every gated op's latency).
func (s Seed) Unit3(a, b, c string) float64 {
	h := fnv1a(fnv1a(fnv1a(fnv1a(fnv1a(fnvOffset, a), "|"), b), "|"), c)
	return float64(mix(uint64(s)^h)>>11) / (1 << 53)
}

// mix is SplitMix64's finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

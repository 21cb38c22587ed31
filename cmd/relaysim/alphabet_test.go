package main

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
)

// TestSweepDrawsTheAlphabet: a sweep given no -alphabet runs every job of
// the seeds sim.SweepAlphabet draws wide with -alphabet=wide (about half
// of them), and the others as run does by default; given -alphabet, it
// passes it to every job instead.
func TestSweepDrawsTheAlphabet(t *testing.T) {
	none := func(string) string { return "" }
	sp, err := parseSweep([]string{"-seeds", "1-40", "-mode", "bulk"}, none, &bytes.Buffer{})
	require.NoError(t, err)
	wide := map[sim.Seed]bool{}
	for _, j := range sp.jobs {
		want := sim.SweepAlphabet(j.seed) == sim.AlphabetWide
		assert.Equal(t, want, slices.Contains(j.args(), "-alphabet=wide"), "%s %s", j.seed, j.label())
		wide[j.seed] = want
	}
	n := 0
	for _, w := range wide {
		if w {
			n++
		}
	}
	assert.InDelta(t, 20, n, 10, "wide seeds of 40")

	sp, err = parseSweep([]string{"-seeds", "1-40", "-mode", "bulk", "-alphabet", "plain"}, none, &bytes.Buffer{})
	require.NoError(t, err)
	for _, j := range sp.jobs {
		assert.NotContains(t, j.args(), "-alphabet=wide")
	}
	assert.Contains(t, sp.extra, "-alphabet=plain")

	f := newRunFlags("run", &bytes.Buffer{})
	require.NoError(t, f.parse([]string{"-seed", "0x2a"}))
	assert.Equal(t, sim.AlphabetPlain, f.cfg.Alphabet, "run's default draws nothing wide")
	f = newRunFlags("run", &bytes.Buffer{})
	assert.ErrorContains(t, f.parse([]string{"-alphabet", "narrow"}), `unknown alphabet "narrow"`)
}

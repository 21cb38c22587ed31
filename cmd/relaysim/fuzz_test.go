package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseShard: an accepted shard is 1 <= i <= n and prints and parses
// back to itself.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"1/1", "2/3", "0/3", "3/2", "/", "1/", " 2/4 ", "-1/-1", "9999999999999999999/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := parseShard(s)
		if err != nil {
			return
		}
		assert.True(t, sh.I >= 1 && sh.I <= sh.N, "%q gave %v", s, sh)
		again, err := parseShard(sh.String())
		require.NoError(t, err)
		assert.Equal(t, sh, again)
	})
}

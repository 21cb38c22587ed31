package dst

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSeed(t *testing.T) {
	for in, want := range map[string]Seed{"0x2a": 42, "42": 42, " 0X2A ": 42, "0xffffffffffffffff": Seed(^uint64(0))} {
		got, err := ParseSeed(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, msg := range map[string]string{
		"zz":                   "malformed seed",
		"":                     "malformed seed",
		"-5":                   "malformed seed",
		"0x10000000000000000":  "out of range",
		"18446744073709551616": "out of range",
	} {
		_, err := ParseSeed(in)
		assert.ErrorContains(t, err, msg, "%q", in)
	}
}

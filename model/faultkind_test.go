package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every kind parses back from its name; anything else is refused with the
// names it could have been.
func TestParseFaultKind(t *testing.T) {
	for _, k := range faultKinds {
		got, err := ParseFaultKind(string(k))
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	_, err := ParseFaultKind("drop-req")
	require.ErrorContains(t, err, `unknown fault kind "drop-req"`)
	assert.ErrorContains(t, err, "drop-request")
	_, err = ParseFaultKind(string(RecoveryOp))
	assert.Error(t, err, "a recovery key is not a kind")
}

package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckBadNodeIDs(t *testing.T) {
	assert.Empty(t, CheckBadNodeIDs(&History{}))
	assert.Empty(t, CheckBadNodeIDs(&History{BadNodeStarts: []BadNodeStart{{ID: "n@4", Err: "node id \"n@4\" ...", TraceLine: 3}}}))
	v := CheckBadNodeIDs(&History{BadNodeStarts: []BadNodeStart{{ID: "n:4", Started: true, TraceLine: 5}}})
	if assert.Len(t, v, 1) {
		assert.Equal(t, PropBadNodeIDs, v[0].Property)
		assert.Equal(t, `"n:4"`, v[0].Node)
		assert.Equal(t, []int{5}, v[0].TraceLines)
	}
}

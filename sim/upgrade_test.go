package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUpgradeAndVersions(t *testing.T) {
	u, err := ParseUpgrade("v1:v3")
	require.NoError(t, err)
	assert.Equal(t, &Upgrade{From: 1, To: 3}, u)
	assert.Equal(t, "v1:v3", u.String())
	for _, bad := range []string{"v1", "v1:v4", "x:v2"} {
		_, err := ParseUpgrade(bad)
		assert.Error(t, err, bad)
	}
	vs, err := ParseVersions("v1, 2,v3")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, vs)
	_, err = ParseVersions("v1,v0")
	assert.ErrorContains(t, err, "want v1, v2 or v3")
}

// TestUpgradePlanRestartsEveryNodeOnceInTurn: node i is upgraded at
// (i+1)/(nodes+1) of the load phase, among the seed's own faults, in time
// order, and every node starts at the upgrade's From.
func TestUpgradePlanRestartsEveryNodeOnceInTurn(t *testing.T) {
	u := &Upgrade{From: 1, To: 3}
	plan := u.plan([]Fault{{At: 3 * time.Second, Kind: "pause", Node: 1}}, 3, 8*time.Second)
	var kinds []string
	for i, f := range plan {
		kinds = append(kinds, f.String())
		if i > 0 {
			assert.LessOrEqual(t, plan[i-1].At, f.At, "in time order")
		}
	}
	assert.Equal(t, []string{"upgrade n1 to v3", "pause n2 for 0s", "upgrade n2 to v3", "upgrade n3 to v3"}, kinds)
	assert.Equal(t, []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second, 6 * time.Second},
		[]time.Duration{plan[0].At, plan[1].At, plan[2].At, plan[3].At})
	assert.Equal(t, []int{1, 1, 1}, Config{Nodes: 3, Upgrade: u}.startVersions())
	assert.Nil(t, (*Upgrade)(nil).plan(nil, 3, time.Second))
}

package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
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
	plan := u.plan([]Fault{{At: 3 * time.Second, Kind: model.FaultPause, Node: 1}}, 3, 8*time.Second)
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

// TestUpgradeCrashAndRestartWhileStopping: a crash and a restart that
// arrive while an upgrade is stopping a node find it down and starting, so
// they do nothing: the upgrade's stop finishes and the upgrade starts the
// one new incarnation, with the new version. (Were the stopping node still
// up, the crash would cut it under the upgrade's stop and the restart
// would start a second incarnation beside the one the upgrade starts.)
// n1 is paused so that its stop waits at a gate while they arrive.
func TestUpgradeCrashAndRestartWhileStopping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCluster(ClusterConfig{
			Seed: 7, Mode: system.ModeStream, Nodes: 3, Cost: DefaultCost(),
			Strategy: &Random{C: Seed(7).Rand()}, Trace: NewTrace(true, 50),
			Versions: []int{system.ProtocolV2, system.ProtocolV2, system.ProtocolV2},
		})
		require.NoError(t, err)
		defer c.Close()
		setUp(c)
		sn := c.nodes[0]
		epoch := sn.epoch
		require.Equal(t, 1, sn.incarnation)

		c.Sched.Pause("n1", c.Now()+time.Second)
		upgraded := make(chan struct{})
		var upErr error
		go func() {
			defer close(upgraded)
			upErr = c.Upgrade(0, system.ProtocolV3)
		}()
		c.Sched.RunFor(100 * time.Millisecond)
		require.True(t, sn.stopping, "the upgrade is stopping n1 (parked at a paused gate)")

		require.NoError(t, c.drive(func() error { c.Crash(0); return c.Restart(0) }))
		assert.Equal(t, 1, sn.incarnation, "the restart started an incarnation while the upgrade was stopping n1")
		assert.Zero(t, c.Stats.Crashes, "the crash cut the node the upgrade was stopping")

		require.True(t, c.Sched.Await(upgraded, time.Minute), "the upgrade never finished")
		require.NoError(t, upErr)
		assert.True(t, sn.up)
		assert.Equal(t, 2, sn.incarnation, "one new incarnation")
		assert.Equal(t, system.ProtocolV3, sn.n.Protocol())
		assert.Greater(t, sn.epoch, epoch)
		assert.Len(t, traceLines(c, " n1 node.up "), 2, "n1 came up at the start and after the upgrade only")
		assert.Empty(t, traceLines(c, " n1 node.crash "))
		var versions []int
		for _, v := range c.History().Versions {
			if v.Node == "n1" {
				versions = append(versions, v.Protocol)
			}
		}
		assert.Equal(t, []int{system.ProtocolV2, system.ProtocolV3}, versions)
	})
}

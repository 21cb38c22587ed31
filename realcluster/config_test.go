package realcluster

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

func TestParseNemesis(t *testing.T) {
	all, err := ParseNemesis("all")
	require.NoError(t, err)
	assert.Equal(t, Kinds, all)
	none, err := ParseNemesis("none")
	require.NoError(t, err)
	assert.Empty(t, none)
	some, err := ParseNemesis("kill, pause")
	require.NoError(t, err)
	assert.Equal(t, []model.FaultKind{KindKill, KindPause}, some)
	for in, want := range map[string]string{
		"kil":       `unknown nemesis kind "kil"`,
		"kill,kill": `nemesis kind "kill" given twice`,
		"kill,":     `unknown nemesis kind ""`,
	} {
		_, err := ParseNemesis(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want)
	}
}

func TestValidate(t *testing.T) {
	base := DefaultConfig()
	base.Relayd, base.RedisServer, base.Dir = "relayd", "redis-server", "out"
	require.NoError(t, base.Validate())
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no nodes", func(c *Config) { c.Nodes = 0 }, "-nodes 0"},
		{"too short", func(c *Config) { c.Duration = time.Millisecond }, "-duration 1ms"},
		{"no redis at all", func(c *Config) { c.RedisServer = "" }, "apt-get install redis-server"},
		{"redis restarts of a Redis it did not start", func(c *Config) { c.RedisAddr = "127.0.0.1:6379" }, "needs a redis-server the runner starts"},
		{"links of one node", func(c *Config) { c.Nodes, c.Nemesis = 1, []model.FaultKind{KindCut} }, "needs at least 2 nodes"},
		{"negative faults", func(c *Config) { c.Faults = -1 }, "-faults -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.Nemesis = slices.Clone(base.Nemesis)
			tt.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestPlanNemesis: the plan is the seed's; with as many steps as kinds
// every kind is injected; steps never overlap and end before 90% of the
// load phase.
func TestPlanNemesis(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Faults = 10
	a, b := planNemesis(cfg), planNemesis(cfg)
	assert.Equal(t, a, b, "same seed, same plan")
	cfg.Seed++
	assert.NotEqual(t, a, planNemesis(cfg), "another seed, another plan")
	require.Len(t, a, 10)
	seen := map[model.FaultKind]bool{}
	for i, f := range a {
		seen[f.Kind] = true
		assert.LessOrEqual(t, f.At+f.For, cfg.Duration*9/10, "%s ends in time", f)
		if i > 0 {
			assert.GreaterOrEqual(t, f.At, a[i-1].At+a[i-1].For, "%s starts after %s ended", f, a[i-1])
		}
		if f.Kind == KindDelay || f.Kind == KindDrop || f.Kind == KindCut {
			assert.NotEqual(t, f.Node, f.Peer, "%s links two nodes", f)
		}
	}
	for _, k := range Kinds {
		if k != KindForged {
			assert.True(t, seen[k], "kind %s planned", k)
		}
	}
	cfg.Nemesis = []model.FaultKind{KindForged}
	assert.Empty(t, planNemesis(cfg), "forgeries are the workload's")
}

// TestPlanWorkload: the workload is the seed's; sends and leaves name
// rooms the user is a member of by then; forged calls name another user.
func TestPlanWorkload(t *testing.T) {
	cfg := DefaultConfig()
	p := newPlan(cfg, 4)
	assert.Equal(t, p, newPlan(cfg, 4))
	forged := 0
	for _, u := range p.Users {
		member := map[string]bool{}
		for _, r := range p.Initial[u] {
			member[r] = true
		}
		for _, a := range p.Actions[u] {
			switch a.Kind {
			case actJoin:
				member[a.Room] = true
			case actLeave:
				assert.True(t, member[a.Room], "%s leaves %s, a room it is in", u, a.Room)
				delete(member, a.Room)
			case actSend:
				assert.True(t, member[a.Room], "%s sends to %s, a room it is in", u, a.Room)
			case actForge:
				forged++
				assert.NotEqual(t, u, a.Forge.As)
			}
		}
	}
	assert.Equal(t, 4, forged)
}

package scenarios

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// A schedule that reboots a node inside the window replays: written as a
// schedule file and read back, it runs to the same terminal state and the
// same trace hash, and its reboot is the op key nX|reboot|nX. Without a
// reboot budget no reboot op is parked, and the replay diverges.
func TestExploreRebootReplays(t *testing.T) {
	setup, block := loadStory(t, "testdata/explore-reboot-mid-retry.txt")
	synctest.Test(t, func(t *testing.T) {
		o := DefaultExploreOptions()
		p := NewEnv(system.ModeBulk)
		o, steps, err := parseExplore(p, block, o)
		require.NoError(t, err)
		require.Equal(t, 1, o.Budget[sim.ExReboot], "the story's reboots=1")
		// Search until a schedule fires the reboot before the horizon.
		ex := dst.NewExplorer(o.Reduce, o.Bound, o.Budget)
		var sched []string
		var out, hash string
		for range 50 {
			one, err := exploreRun(setup, steps, system.ModeBulk, o, ex)
			require.NoError(t, err)
			if s := ex.Schedule(); slices.Contains(s, "n1|reboot|n1") && slices.Index(s, "n1|reboot|n1") < len(s)-1 {
				sched, out, hash = s, one.out, one.trace.Hash()
				break
			}
			if !ex.Next() {
				break
			}
		}
		require.NotNil(t, sched, "no schedule of the first 50 rebooted n1 inside the window")
		parsed, err := dst.ParseSchedule(dst.FormatSchedule(sched))
		require.NoError(t, err)
		replay := dst.NewExplorer(o.Reduce, o.Bound, o.Budget)
		replay.Replay = parsed
		again, err := exploreRun(setup, steps, system.ModeBulk, o, replay)
		require.NoError(t, err)
		require.NoError(t, replay.Divergence)
		assert.Equal(t, out, again.out)
		assert.Equal(t, hash, again.trace.Hash())

		// No reboot budget: nothing to fire, the replay diverges.
		none := o
		none.Budget = map[string]int{}
		stale := dst.NewExplorer(none.Reduce, none.Bound, none.Budget)
		stale.Replay = parsed
		_, err = exploreRun(setup, steps, system.ModeBulk, none, stale)
		require.NoError(t, err)
		assert.Error(t, stale.Divergence)
	})
}

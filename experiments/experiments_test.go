package experiments

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
)

// The seed's senders: rate of the room's members send once a second, in
// step, each through the node it joined and connected on.
func TestActionsSendersInStep(t *testing.T) {
	seed := sim.Seed(0x5eed)
	as := Actions(seed, 150, 10, 3*time.Second)
	node := map[string]int{}
	perSecond := map[time.Duration]map[string]bool{}
	for _, a := range as {
		switch a.Kind {
		case sim.ActConnect:
			node[a.User] = a.Node
		case sim.ActSend:
			require.Equal(t, node[a.User], a.Node, "%s sends through its own node", a.User)
			require.Zero(t, (a.At-warmUp)%time.Second, "sends are on the second")
			if perSecond[a.At] == nil {
				perSecond[a.At] = map[string]bool{}
			}
			require.False(t, perSecond[a.At][a.User], "one message per sender per second")
			perSecond[a.At][a.User] = true
		}
	}
	require.Len(t, node, 150)
	require.Len(t, perSecond, 3)
	var first map[string]bool
	for _, us := range perSecond {
		require.Len(t, us, 10)
		if first != nil {
			require.Equal(t, first, us, "the same senders every second")
		}
		first = us
	}
	require.Equal(t, Senders(seed, 150, 10), Senders(seed, 150, 10), "the sample is the seed's")
	require.NotEqual(t, Senders(seed, 150, 10), Senders(seed+1, 150, 10))
	require.Equal(t, []int{0, 1, 2}, Senders(seed, 3, 10), "more senders than members: all of them")
	sum := 0
	for _, n := range SendersPerNode(seed, 150, 50) {
		sum += n
	}
	require.Equal(t, 50, sum)
}

// The burst the busiest node is handed each second, against core + queue.
func TestRowBurst(t *testing.T) {
	single := Row{Mode: "single", Room: 150, Rate: 10, Senders: []int{5, 4, 1}, Peak: 30}
	require.Equal(t, 150, single.TasksPerMessage())
	require.Equal(t, 750, single.Burst())
	require.Equal(t, "170 (seed)", single.PoolWant())
	require.False(t, single.PoolOK())
	require.Contains(t, single.why(), "at least 7 senders on one node")
	bulk := Row{Mode: "bulk", Room: 150, Rate: 50, Senders: []int{17, 19, 14}, Peak: 30}
	require.Equal(t, 52, bulk.TasksPerMessage())
	require.Equal(t, 988, bulk.Burst())
	require.True(t, bulk.PoolOK())
	require.Empty(t, bulk.why())
	require.Equal(t, "all hold", bulk.Verdict())
	bulk.Failed, bulk.Violations = "timely-live-delivery=2", 2
	require.Contains(t, bulk.Verdict(), "timely-live-delivery=2")
}

// The chance that the pool grows, over the samples of senders, checked
// against exact figures computed independently (hypergeometric sums).
func TestGrowthChance(t *testing.T) {
	for _, c := range []struct {
		mode       string
		room, rate int
		want       float64
	}{
		{"single", 150, 10, 0.048915},   // 7 of 10 senders on one node
		{"single", 90, 30, 0.672559},    // 12 of 30
		{"single", 150, 30, 1},          // 7 of 30: always
		{"bulk", 150, 50, 0.439831},     // 20 of 50 (20 x 52 = 1040)
		{"bulk", 150, 30, 0.0000896580}, // 20 of 30
		{"single", 30, 30, 0},           // 30 tasks a message: never
	} {
		r := Row{Mode: c.mode, Room: c.room, Rate: float64(c.rate)}
		require.InDelta(t, c.want, r.GrowthChance(), 1e-6, "%s room %d at %d", c.mode, c.room, c.rate)
	}
}

package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Steals are planned from a sub-seed of their own: the same seed plans
// the same steals; each reuses a message id its victim's workload sent
// earlier in that room, by another user; both a member's and a
// non-member's steals are drawn.
func TestPlanSteals(t *testing.T) {
	const start, end = 200 * time.Millisecond, 10 * time.Second
	kinds := map[bool]int{}
	for s := range 100 {
		wl := Generate(Seed(s).Derive("workload"), WorkloadConfig{Users: 6, Rooms: 3, Nodes: 3, Duration: end,
			Rate: 10, Churn: 1, Tick: 50 * time.Millisecond, RoomsPerUser: 2})
		plan := Seed(s).Derive("faults").Derive("plan")
		fs := PlanSteals(plan, 3, wl.Actions, 3, start, end)
		require.Equal(t, fs, PlanSteals(plan, 3, wl.Actions, 3, start, end))
		require.Len(t, fs, 3)
		for _, f := range fs {
			assert.Equal(t, model.FaultSteal, f.Kind)
			assert.True(t, f.At >= start && f.At < end, "at %v", f.At)
			assert.NotEqual(t, f.User, f.Steal.Victim)
			sentBefore := false
			for _, a := range wl.Actions {
				if a.Kind == ActSend && a.User == f.Steal.Victim && a.MsgID == f.Steal.MsgID && a.Room == f.Steal.Room && a.At < f.At {
					sentBefore = true
				}
			}
			assert.True(t, sentBefore, "%v: the victim sent the id in the room before", f)
			assert.Equal(t, plannedMember(wl.Actions, f.User, f.Steal.Room, f.At), f.Steal.Member)
			kinds[f.Steal.Member]++
		}
	}
	assert.Positive(t, kinds[true], "members' steals drawn")
	assert.Positive(t, kinds[false], "non-members' steals drawn")
	assert.Empty(t, PlanSteals(Seed(1), 0, nil, 3, start, end))
}

// A member's steal is its own new message, delivered with the stealer as
// sender and its own payload; a non-member's is refused
// FailedPrecondition and changes nothing. The oracle finds nothing wrong.
func TestStealsAreTheStealersOwn(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{}, func(c *Cluster) {
		setUp(c)
		send(c, "u1", "u1-m1")
		c.Sched.RunFor(time.Second)
		c.Inject(Fault{Kind: model.FaultSteal, User: "u2", Steal: Steal{Room: "r", Victim: "u1", MsgID: "u1-m1", Member: true}})
		c.Inject(Fault{Kind: model.FaultSteal, User: "x9", Steal: Steal{Room: "r", Victim: "u1", MsgID: "u1-m1", Node: 1}})
		c.Sched.RunFor(2 * time.Second)

		h, err := c.Snapshot()
		require.NoError(t, err)
		var steals []model.Event
		for _, ev := range h.Events {
			if ev.Steal {
				steals = append(steals, ev)
			}
		}
		require.Len(t, steals, 2)
		for _, ev := range steals {
			switch ev.User {
			case "u2":
				assert.True(t, ev.OK)
				assert.Equal(t, uint64(2), ev.Seq, "a new message, not a duplicate of seq 1")
				assert.False(t, ev.Duplicate)
			case "x9":
				assert.Equal(t, "FailedPrecondition", ev.Err)
			}
		}
		require.Len(t, h.Final.Logs["r"], 2)
		assert.Equal(t, "u2", h.Final.Logs["r"][1].Sender)
		assert.Equal(t, model.PayloadDigest(stealPayload("u2", "u1-m1")), h.Final.Logs["r"][1].Payload)
		got := 0
		h.EachDelivery(func(ev model.Event) {
			if ev.Seq == 2 {
				got++
				assert.Equal(t, "u2", ev.Sender)
				assert.Equal(t, model.PayloadDigest(stealPayload("u2", "u1-m1")), ev.Payload)
			}
		})
		assert.Equal(t, 3, got, "every member got the steal as u2's message")
		assert.Empty(t, model.Check(h))
		assert.Equal(t, Coverage{Steals: 2, StealsAsMember: 1, StealsRefused: 1}, c.coverage.snapshot())
	})
}

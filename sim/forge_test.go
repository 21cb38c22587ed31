package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Forged calls are planned from a sub-seed of their own: the same seed
// plans the same calls, and none impersonates its own caller with its own
// credential (that would be a valid call).
func TestPlanForgeries(t *testing.T) {
	users, rooms := names("u", 6), names("r", 3)
	const start, end = 200 * time.Millisecond, 10 * time.Second
	forms := map[string]bool{}
	for s := range 200 {
		plan := Seed(s).Derive("faults").Derive("plan")
		fs := PlanForgeries(plan, 2, users, rooms, start, end)
		require.Equal(t, fs, PlanForgeries(plan, 2, users, rooms, start, end))
		require.Len(t, fs, 2)
		for _, f := range fs {
			assert.Equal(t, model.FaultForge, f.Kind)
			assert.True(t, f.At >= start && f.At < end, "at %v", f.At)
			assert.NotEqual(t, f.User, f.Forge.As, "a forged call names another user than its caller")
			assert.Equal(t, f.Forge.Call == "send", f.Forge.MsgID != "", "%+v", f.Forge)
			forms[f.Forge.Token] = true
		}
	}
	assert.Len(t, forms, len(forgeryForms), "every credential form is drawn")
	assert.Empty(t, PlanForgeries(Seed(1), 0, users, rooms, start, end))
	alone := PlanForgeries(Seed(1), 50, []string{"u1"}, rooms, start, end)
	for _, f := range alone {
		assert.NotEqual(t, "other-user", f.Forge.Token, "alone, its own credential would be valid")
	}
}

// A forged send or join, whatever its credential, is answered
// Unauthenticated, recorded as a forged event naming the impersonated user,
// and changes nothing: the next real send still gets seq 1.
func TestForgedCallsAreRejected(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{}, func(c *Cluster) {
		setUp(c)
		for i, form := range forgeryForms {
			c.Inject(Fault{Kind: model.FaultForge, User: "u1", Forge: Forgery{Call: "send", Room: "r", As: "u2", Token: form, MsgID: "forged" + form}})
			c.Inject(Fault{Kind: model.FaultForge, User: "u1", Forge: Forgery{Call: "join", Room: "r", As: names("x", 3)[i], Token: form}})
		}
		c.Sched.RunFor(time.Second)
		send(c, "u2", "m1")
		c.Sched.RunFor(time.Second)

		h, err := c.Snapshot()
		require.NoError(t, err)
		forged := 0
		for _, ev := range h.Events {
			switch ev.Kind {
			case model.KindForgedSend, model.KindForgedJoin:
				forged++
				assert.Equal(t, "Unauthenticated", ev.Err, "%+v", ev)
				assert.NotEqual(t, "u1", ev.User, "the event names the impersonated user")
			case model.KindSend:
				assert.Equal(t, uint64(1), ev.Seq, "the forged sends sequenced nothing")
			}
		}
		assert.Equal(t, 2*len(forgeryForms), forged)
		assert.Empty(t, model.Check(h))
		assert.Len(t, traceLines(c, "err=Unauthenticated"), 2*len(forgeryForms))
	})
}

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
// plans the same calls, none impersonates its own caller, and every method
// is drawn with every credential shape.
func TestPlanForgeries(t *testing.T) {
	users, rooms := names("u", 6), names("r", 3)
	const start, end = 200 * time.Millisecond, 10 * time.Second
	pairs := map[[2]string]bool{}
	for s := range 300 {
		plan := Seed(s).Derive("faults").Derive("plan")
		fs := PlanForgeries(plan, 4, users, rooms, 3, start, end)
		require.Equal(t, fs, PlanForgeries(plan, 4, users, rooms, 3, start, end))
		require.Len(t, fs, 4)
		for _, f := range fs {
			assert.Equal(t, model.FaultForge, f.Kind)
			assert.True(t, f.At >= start && f.At < end, "at %v", f.At)
			assert.NotEqual(t, f.User, f.Forge.As, "a forged call names another user than its caller")
			fc, ok := forgeCallNamed(f.Forge.Call)
			require.True(t, ok, f.Forge.Call)
			assert.Equal(t, fc.msg, f.Forge.MsgID != "", "%+v", f.Forge)
			assert.Equal(t, fc.action == ActForgeConnect, f.Forge.Room == "", "%+v", f.Forge)
			assert.True(t, f.Forge.Node >= 0 && f.Forge.Node < 3)
			pairs[[2]string{f.Forge.Call, f.Forge.Token}] = true
		}
	}
	assert.Len(t, pairs, len(forgeCalls)*len(system.CredShapes), "every method is drawn with every shape")
	assert.Empty(t, PlanForgeries(Seed(1), 0, users, rooms, 3, start, end))
	_, err := NewForgery("teleport", "r", "u1", "garbage", 1, 0)
	assert.ErrorContains(t, err, "relay-stream")
	_, err = NewForgery("send", "r", "u1", "lucky", 1, 0)
	assert.ErrorContains(t, err, "wrong-cluster")
}

// Every method with every credential shape, whatever it names, is answered
// Unauthenticated, recorded as a forged event naming the impersonated user
// (a relay's recipient), counted in the coverage, and changes nothing: the
// next real send still gets seq 1 and is the only delivery.
func TestForgedCallsAreRejected(t *testing.T) {
	withCluster(t, system.ModeStream, FaultMix{}, func(c *Cluster) {
		setUp(c)
		n := 0
		for _, call := range ForgeCalls() {
			for _, shape := range system.CredShapes {
				n++
				f, err := NewForgery(call, "r", "u2", string(shape), n, 0)
				require.NoError(t, err)
				c.Forge(f, "u1")
			}
		}
		c.Sched.RunFor(time.Second)
		send(c, "u2", "m1")
		c.Sched.RunFor(time.Second)

		h, err := c.Snapshot()
		require.NoError(t, err)
		forged := map[model.Kind]int{}
		for _, ev := range h.Events {
			switch {
			case ev.Kind.Forged():
				forged[ev.Kind]++
				assert.Equal(t, "Unauthenticated", ev.Err, "%+v", ev)
				assert.Equal(t, "u2", ev.User, "the event names the impersonated user")
				assert.NotEmpty(t, ev.Cred)
			case ev.Kind == model.KindSend:
				assert.Equal(t, uint64(1), ev.Seq, "the forged calls sequenced nothing")
			}
		}
		for _, k := range model.ForgedKinds {
			assert.Equal(t, len(system.CredShapes), forged[k], k)
		}
		h.EachDelivery(func(d model.Event) { assert.Equal(t, "m1", d.MsgID, "only the real message is delivered") })
		assert.Empty(t, model.Check(h))
		assert.Len(t, traceLines(c, "err=Unauthenticated"), n)
		cov := c.coverage.snapshot()
		for _, call := range ForgeCalls() {
			assert.Equal(t, len(system.CredShapes), cov.Forgeries[call], call)
		}
	})
}

package sim

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

// A crash stops the node where it stands. n1 is crashed while two of its
// multi-step operations are cut in half: the fan-out of m1 (the room log
// write is done, the bulk relay tasks to n2 and n3 are parked at their
// task gate) and a probe that writes two Redis keys under a context the
// crash does not cancel (the first write done, the second parked at its
// Redis gate). Nothing of the dead incarnation may pass a gate after its
// node.crash line: the relays never reach n2 or n3 (u2 and u3 catch m1 up
// from the log), the second key never reaches miniredis, and after the
// restart only the new incarnation's ops appear.
func TestCrashCutsInFlightOperations(t *testing.T) {
	withCluster(t, system.ModeBulk, FaultMix{}, func(c *Cluster) {
		setUp(c)
		// A Redis client of n1's incarnation: its commands pass n1's gates.
		rdb := redis.NewClient(c.redisOptions())
		rdb.AddHook(c.nodes[0].hooks)
		probe := system.WithLabel(context.Background(), "probe")
		wrote1, go2, wrote2 := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer rdb.Close()
			defer close(wrote2)
			_ = rdb.Set(probe, "probe:1", "x", 0).Err()
			close(wrote1)
			<-go2
			_ = rdb.Set(probe, "probe:2", "x", 0).Err()
		}()
		require.True(t, c.Sched.Await(wrote1, time.Second), "the probe's first write")

		send(c, "u1", "m1")
		for i := 0; c.Sched.ParkedPrefix("n1", system.PointTask, "bulk r#1 ->") < 2; i++ {
			require.Less(t, i, 100000, "m1's bulk relay tasks never parked on n1")
			c.Sched.RunFor(time.Microsecond)
		}
		close(go2)
		synctest.Wait() // the probe parks at its second write's gate
		require.Equal(t, 1, c.Sched.ParkedPrefix("n1", KindRedis, "probe set probe:2"))
		require.NoError(t, c.drive(func() error { c.Crash(0); return nil }))
		assert.GreaterOrEqual(t, c.Sched.Held(), 3, "the relay tasks and the probe's write are held")

		c.Sched.RunFor(5 * time.Second)
		select {
		case <-wrote2:
			t.Error("the probe's second write returned: the dead incarnation passed a gate")
		default:
		}
		assert.True(t, c.Redis.Exists("probe:1"), "the write before the crash")
		assert.False(t, c.Redis.Exists("probe:2"), "the write after the crash reached miniredis")

		restart := len(strings.Split(strings.TrimSpace(c.Trace.Text()), "\n"))
		require.NoError(t, c.drive(func() error { return c.Restart(0) }))
		c.Sched.RunFor(5 * time.Second)
		assert.False(t, c.Redis.Exists("probe:2"), "the write after the crash reached miniredis")

		lines := strings.Split(strings.TrimSpace(c.Trace.Text()), "\n")
		crash := -1
		for i, l := range lines {
			if strings.Contains(l, " n1 node.crash ") {
				crash = i
			}
		}
		require.GreaterOrEqual(t, crash, 0, "no crash line")
		for _, l := range lines[crash+1 : restart] {
			if f := strings.Fields(l); len(f) > 2 && f[1] == "n1" && !(f[2] == "session.closed" && strings.HasSuffix(l, " crash")) {
				t.Errorf("line %q: the dead incarnation went on after its crash", l)
			}
		}
		for _, l := range lines[crash+1:] {
			for _, dead := range []string{"probe set probe:2", "task bulk r#1", "RelayBulkMessage bulk r#1"} {
				if strings.Contains(l, dead) {
					t.Errorf("line %q: an operation of the dead incarnation ran after the crash", l)
				}
			}
		}
		assert.Contains(t, lines[crash+1], "n1 session.closed u1 crash", "the crash ends u1's stream")
		assert.Equal(t, 1, delivered(c, "u2", "m1"), "u2 caught m1 up from the log")
		assert.Equal(t, 1, delivered(c, "u3", "m1"), "u3 caught m1 up from the log")
	})
}

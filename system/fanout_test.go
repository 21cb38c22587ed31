package system

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFanOutTasksPerMessage reproduces the seeds' count: a room of 150
// members, 50 on each of 3 nodes, all connected; one message sent on n1 costs
// n1's executor 150 tasks in single mode (50 local deliveries + 100 relays)
// and 52 in bulk or stream mode (50 local deliveries + one bulk relay, or
// one stream item, per other node).
func TestFanOutTasksPerMessage(t *testing.T) {
	tests := []struct {
		mode  Mode
		tasks int64
	}{
		{ModeSingle, 150},
		{ModeBulk, 52},
		{ModeStream, 52},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, tt.mode, 3)
				c.createRoom("r")
				var members []*testUser
				for i := range 150 {
					u := c.connect(fmt.Sprintf("u%03d", i), fmt.Sprintf("n%d", i/50+1))
					u.join("r")
					members = append(members, u)
				}
				sender := members[0] // on n1
				before := c.node("n1").Metrics().Executor

				resp := sender.send("r", "m1", "hello")
				c.settle()

				after := c.node("n1").Metrics().Executor
				assert.Equal(t, uint64(1), resp.Seq)
				assert.Equal(t, tt.tasks, after.Submitted-before.Submitted, "tasks submitted on the sender's node")
				assert.Equal(t, tt.tasks, after.Completed-before.Completed, "tasks completed on the sender's node")

				ds := c.rec.dispatches()
				require.Len(t, ds, 1)
				assert.Equal(t, int(tt.tasks), ds[0].Tasks)
				assert.Len(t, ds[0].Local, 50)
				assert.Len(t, ds[0].Members, 150)

				for _, u := range members {
					assert.Equal(t, []uint64{1}, u.seqs("r"), "%s receives the message once", u.name)
				}
			})
		})
	}
}

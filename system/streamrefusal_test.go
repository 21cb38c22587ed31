package system

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestStreamRefusalCostsOneItem: a receiver whose limits are smaller than
// the sender's (a config rollout) refuses one item of a stream with
// InvalidArgument. That item alone is lost to live delivery (it is owed
// through the catch-up); the other items on the link, of its room and of
// other rooms, are delivered live, and the link carries on.
func TestStreamRefusalCostsOneItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeStream, 2, withConfig(func(cfg *Config) {
			if cfg.NodeID == "n2" {
				cfg.MaxPayload = 16
			}
		}))
		alice, bob := c.connect("alice", "n1"), c.connect("bob", "n2")
		for _, room := range []string{"r", "r2"} {
			c.createRoom(room)
			alice.join(room)
			bob.join(room)
		}
		alice.send("r", "m1", "small")
		alice.send("r", "m2", strings.Repeat("x", 32)) // over n2's limit
		alice.send("r2", "m1", "small")
		alice.send("r2", "m2", "small")
		time.Sleep(time.Second) // virtual: the streams linger and close
		c.settle()

		assert.Equal(t, []uint64{1}, bob.seqs("r"), "r#2 is refused, and owed through the catch-up")
		assert.Equal(t, []uint64{1, 2}, bob.seqs("r2"), "another room on the link is not dropped with it")
		for _, d := range bob.deliveries() {
			assert.False(t, d.FromLog, "%s#%d live", d.Room, d.Seq)
		}
		for _, e := range eventsOf[StreamEvent](c.rec) {
			assert.NotEqual(t, "drop", e.What, "the link drops nothing: %+v", e)
		}

		// The link carries on; the next message of r brings r#2 from the log.
		alice.send("r", "m3", "small")
		time.Sleep(time.Second)
		c.settle()
		assert.Equal(t, []uint64{1, 2, 3}, bob.seqs("r"))
		ds := bob.deliveries()
		last := ds[len(ds)-1]
		assert.False(t, last.FromLog, "r#3 live")
	})
}

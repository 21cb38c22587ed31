package sim

import (
	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// tryBadNodeID tries once to build a node whose id is one of BadNodeIDs
// (drawn from a sub-seed of its own, "bad-node-ids"), configured like the
// cluster's nodes in every other respect, and records whether the relay
// refused it (model.BadNodeStart; bad-node-ids-refused judges it). A
// node the relay accepts is killed at once, never started.
func (c *Cluster) tryBadNodeID() {
	id := BadNodeIDs[c.cfg.Seed.Derive("bad-node-ids").Rand().IntN(len(BadNodeIDs))]
	cfg := system.DefaultConfig()
	if c.cfg.Node != nil {
		c.cfg.Node(&cfg)
	}
	cfg.NodeID, cfg.Advertise, cfg.Mode = id, "bad-node-id", c.cfg.Mode
	cfg.ClusterToken, cfg.UserSecret = clusterToken, c.userSecret
	n, err := system.New(cfg, system.Deps{Listener: c.Net.Listen("bad-node-id"), Redis: c.redisOptions(), TargetScheme: "passthrough"})
	rec := model.BadNodeStart{ID: id, At: c.Now(), Started: err == nil}
	if err != nil {
		rec.Err = err.Error()
	} else {
		n.Kill()
	}
	rec.TraceLine = c.Trace.Event(c.Now(), "harness", "node.bad-id %q started=%t err=%v", id, rec.Started, err)
	c.rec.badNodeStart(rec)
}

package sim

// This file holds the bounds the checkers judge a run by, derived from
// the cost model and the node configuration: never from what the relay
// says of itself.

import (
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// closeBound is how soon a node must end the stream of a client that
// closed it: the client's cancel reaches the node with the next frame, and
// the handler only has to notice it (a few gated steps).
const closeBound = time.Second

// SetBounds sets the bounds the checkers judge the run by: the keep-alive
// bound of a vanished client's stream, the live-delivery bound and the
// recovery times of faults (from the cost model and the node config), and
// the per-node goroutine bound.
func (c *Cluster) SetBounds(cost CostModel, maxDelay time.Duration) {
	nc := system.DefaultConfig()
	if c.cfg.Node != nil {
		c.cfg.Node(&nc)
	}
	c.rec.bounds(func(h *model.History) {
		h.KeepAliveBound = nc.StreamKeepAlive + nc.StreamKeepAliveTimeout + 5*time.Second
		h.CloseBound = closeBound
		h.LiveBound = LiveBound(cost, maxDelay)
		h.ItemHop = ItemHop(cost)
		h.SendBound = ClientTimeout
		h.Recovery = Recovery(nc)
		h.ModeRefresh = ModeRefresh(nc)
		h.StaleLinkDelay = nc.StreamLinger
		h.GoroutineBound = GoroutineBound
		if c.cfg.Mode == system.ModeStream {
			h.GoroutineBound = StreamGoroutineBound
			h.RelayBackoff = nc.RelayBackoff
		}
	})
}

func maxDelayOf(s Strategy) time.Duration {
	switch s := s.(type) {
	case *Random:
		return s.MaxDelay
	case *dst.PCT:
		return s.MaxDelay
	case *Exhaustive:
		return s.Delay
	}
	return 0
}

// LiveBound is the time within which a connected member must receive a
// message no fault touched (model.CheckTimely), derived from the cost
// model: the longest chain of gated operations on the live path (the
// send's RPC and Lua script, a route look-up, the relay's RPC out and back
// in, the task, the session lock, the stream write and the client's
// receive: liveHops, each at its largest drawn latency), plus the scheduler
// delaying a few of them (liveDelays x its largest delay), times two.
func LiveBound(cost CostModel, maxDelay time.Duration) time.Duration {
	return 2 * (liveHops*liveHop(cost) + liveDelays*maxDelay)
}

// liveHop is one gated operation on the live path at its largest drawn
// latency, with the task and send costs.
func liveHop(cost CostModel) time.Duration {
	return max(cost.NetMin+2*cost.NetMean, cost.RedisMin+2*cost.RedisMean) + cost.TaskCost + cost.SendCost
}

// ItemHop is what a receiving node may take per gated step of handing
// over a relay stream item queued ahead of a message on its link
// (model.History.ItemHop): the live path's hop.
func ItemHop(cost CostModel) time.Duration { return liveHop(cost) }

// ContendedLiveBound is what the live bound grows by when ops wait for
// cores (CPUModel): each of the live path's hops at maxWait, the longest
// wait for a core any op of the run met, times two as LiveBound.
func ContendedLiveBound(maxWait time.Duration) time.Duration {
	return 2 * liveHops * maxWait
}

const (
	liveHops   = 16
	liveDelays = 4
)

// Recovery is how long the effects of each timed fault kind may outlast
// it on the live path: a restarted or healed peer is re-dialled with the
// connect back-off (at most deterministicConnect's MaxDelay plus
// MinConnectTimeout) after relays time out and retry (RelayTimeout x
// RelayAttempts); a flushed route comes back at the next refresh
// (RouteTTL/3); a vanished client's stale session absorbs pushes until the
// keep-alive reaps it; a relay whose request or response was lost holds a
// worker through its timeouts and back-offs ("op").
func Recovery(cfg system.Config) map[model.FaultKind]time.Duration {
	relay := time.Duration(cfg.RelayAttempts) * (cfg.RelayTimeout + time.Duration(cfg.RelayAttempts)*cfg.RelayBackoff)
	reconnect := deterministicConnect.Backoff.MaxDelay + deterministicConnect.MinConnectTimeout + relay
	// A broken relay stream holds its link's items until the writer has
	// backed off (attempt x RelayBackoff) and written them again on a new
	// stream: an injected break fails at once, it does not wait for the
	// write watchdog. After as many breaks as attempts the writer may give
	// the items up: they arrive with the members' next catch-up.
	resend := time.Duration(cfg.RelayAttempts) * cfg.RelayBackoff
	// A stream broken at its receiver (recv-break) fails at the sender
	// only at its next write or at its close for the ack: with no new
	// item, when the stream has lingered.
	// An overlapping restart ends when the new incarnation is up and the
	// old one has stopped: nothing is down and no dial fails meanwhile
	// (the address always has a listener), so a relay that still names
	// the old incarnation fails at once (connections closed, or the new
	// one refuses the old epoch), reads the registry again and reaches
	// the new one after one back-off; a stream link resends likewise.
	// Not the registry's refresh interval: a correct relay never waits
	// for the next heartbeat.
	overlap := resend
	return map[model.FaultKind]time.Duration{
		model.FaultOverlap:       overlap,
		model.RecoveryDefault:    reconnect,
		model.FaultStreamBreak:   resend,
		model.FaultRecvBreak:     cfg.StreamLinger + resend,
		model.FaultStreamRefused: cfg.StreamLinger + resend,
		model.FaultStreamGiveUp:  relay + cfg.CatchUpInterval,
		model.RecoveryOp:         relay,
		model.FaultRouteFlush:    cfg.RouteTTL/3 + reconnect,
		// A rewind loses the routes written in its window: they come back
		// at the next refresh, as after a flush.
		model.FaultRedisRewind: cfg.RouteTTL/3 + reconnect,
		model.FaultVanish:      cfg.StreamKeepAlive + cfg.StreamKeepAliveTimeout + reconnect,
		model.FaultSlow:        cfg.CatchUpInterval + reconnect,
		// A stalled client is cut SlowClientAfter after its outbox filled
		// (the catch-up's wait), sees it once it reads again, and
		// reconnects: its replay follows.
		model.FaultStall: cfg.SlowClientAfter + cfg.CatchUpInterval + reconnect,
	}
}

// GiveUpBudget is how long a relay stream link must have been broken
// before its writer may give its items up: after the k-th failed attempt
// the writer backs off k x RelayBackoff, so the last of RelayAttempts
// attempts comes at least the sum of the first RelayAttempts-1 back-offs
// after the first. A writer that gave up sooner (new traffic woke it
// through its back-off) is not excused by the harness.
func GiveUpBudget(cfg system.Config) time.Duration {
	n := time.Duration(cfg.RelayAttempts)
	return n * (n - 1) / 2 * cfg.RelayBackoff
}

// Settle is how long after the heal the liveness phase waits before it
// sends the traffic CheckTimely judges with no fault excuse: a route
// flushed in the fault phase is back at the next refresh (every
// min(RouteTTL, RegistryTTL)/3), a peer's channels out of their connect
// back-off (deterministicConnect's MaxDelay plus MinConnectTimeout), a
// relay that was in flight at the heal is done with its attempts
// (RelayAttempts x (RelayTimeout + RelayAttempts x RelayBackoff)) and a
// stream writer out of its longest back-off (the cap, RelayAttempts x
// RelayBackoff). Each is derived from the configuration; they are added
// up, since one may follow another.
func Settle(cfg system.Config) time.Duration {
	refresh := min(cfg.RouteTTL, cfg.RegistryTTL) / 3
	reconnect := deterministicConnect.Backoff.MaxDelay + deterministicConnect.MinConnectTimeout
	attempts := time.Duration(cfg.RelayAttempts)
	relay := attempts * (cfg.RelayTimeout + attempts*cfg.RelayBackoff)
	streamCap := attempts * cfg.RelayBackoff
	return refresh + reconnect + relay + streamCap
}

// ModeRefresh is how long after a node's version change its peers may
// relay to it, or it to them, in the mode of the previous incarnations
// (CheckRelayMode): a peer's version is read from the registry, and a
// sender reads it again after a failed relay to the old incarnation, at
// the latest when the entry is refreshed (every min(RouteTTL,
// RegistryTTL)/3); the relay then in flight may still finish its attempts.
func ModeRefresh(cfg system.Config) time.Duration {
	attempts := time.Duration(cfg.RelayAttempts)
	return min(cfg.RouteTTL, cfg.RegistryTTL)/3 + attempts*(cfg.RelayTimeout+attempts*cfg.RelayBackoff)
}

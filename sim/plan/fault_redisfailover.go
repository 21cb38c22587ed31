package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// redisFailover is Redis failing over to a replica that missed its last
// writes: the replica lags the primary by For (100 ms to 1 s), so at the
// failover every write of the last For is lost — messages and their seqs,
// joins and leaves, routes, idempotency keys, heartbeats — while every
// node keeps running (unlike a redis-rewind, no node restarts across it,
// so no epoch goes back: what it tests is the relay riding out lost
// writes under steady traffic). The harness snapshots Redis at At (the
// replica's state) and restores it at At+For (the follow-up, End); the
// oracle's record is a rewind's (model.FaultRedisRewind: Redis lost the
// writes of that window), with the same excuses (docs/oracle.md, "After
// Redis lost data").
//
// Off in the default mix (its bound is 0), so no seed's draws move, and
// not in the sweep's worlds: after a failover the relay hands a lost seq
// out again while the old message's tasks are still in flight, and the
// harness's gate keys (room#seq and recipient) then name two operations
// at once, which it reports as a harness error (about 1 run in 90 with
// -max-redis-failovers=1). Run it with -max-redis-failovers N.
type redisFailover struct{}

// A failover's replica lag: FailoverMin to FailoverMax.
const (
	FailoverMin = 100 * time.Millisecond
	FailoverMax = time.Second
)

func (redisFailover) Name() FaultKind { return model.FaultRedisFailover }

func (redisFailover) Budget() Budget {
	return Budget{Knob: string(model.FaultRedisFailover), Flag: "max-redis-failovers", MixRank: 21,
		Usage: "most Redis failovers to a replica that missed the last writes (up to 1 s of them) per run"}
}

// Place: Node is only the node the harness names the snapshot after (the
// liveness phase restores a failover it ended first; it restarts that
// node as after a rewind).
func (redisFailover) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultRedisFailover, Node: r.IntN(w.Nodes), For: Dur(r, FailoverMin, FailoverMax)}, true
}

func (redisFailover) Follow(f Fault) (Fault, bool) { return windowEnd(f) }

func (redisFailover) Trace(f Fault) string {
	if f.End {
		return fmt.Sprintf("%s n%d: the replica takes over", f.Kind, f.Node+1)
	}
	return fmt.Sprintf("%s n%d: the replica lags %v", f.Kind, f.Node+1, f.For)
}

func (redisFailover) Head(f Fault) (string, []string) { return windowHead(f) }

func (redisFailover) Heads() []string { return []string{string(model.FaultRedisFailover)} }

func (redisFailover) ReadHead(h *headReader, _ string, f *Fault) {
	readWindow(h, model.FaultRedisFailover, f)
}

// Touches: none of its own; the panel records the lost window
// (RedisSnapshot and RedisRestore).
func (redisFailover) Touches(Fault) Touch { return TouchNone }

func (redisFailover) Apply(p Panel, f Fault) {
	rp, ok := p.(rewindPanel)
	if !ok {
		return
	}
	if f.End {
		rp.RedisRestore(f.Node)
		return
	}
	rp.RedisSnapshot(f.Node)
}

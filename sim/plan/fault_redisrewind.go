package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// redisRewind sends Redis back to an older state: a restore from a
// snapshot, or a failover to a replica that missed the last writes. At
// its start the harness snapshots Redis and restarts Node twice (two new
// epochs, two increments of its epoch counter, each incarnation relaying
// to its peers); at its end (its follow-up, End) Redis is restored to the
// snapshot and Node restarts once more — with an epoch its peers have
// already seen, or below one. Every other write of the window (messages
// and their seqs, joins and leaves, routes, idempotency keys) is lost
// with it.
//
// It is off in the default mix (DefaultBounds: 0), so no seed's draws
// move; `relaysim sweep` runs some of its seeds with -max-redis-rewinds=1
// (Budget.Sweep).
type redisRewind struct{}

// A rewind's window lasts RewindMin to RewindMax: long enough for two
// restarts and their relays, as a snapshot's age or a replica's lag.
const (
	RewindMin = 2 * time.Second
	RewindMax = 6 * time.Second
)

// rewindPanel is what a rewind needs of the harness beyond Panel:
// RedisSnapshot keeps a copy of Redis' data (and starts the rewind's
// record), RedisRestore puts it back (and ends it; a rewind the fault
// phase ended before its end is restored, and node restarted, by the
// liveness phase); after each restart a
// burst of sends through Node (RewindBurst) has it relay to its peers.
type rewindPanel interface {
	RedisSnapshot(node int)
	RedisRestore(node int)
	// RewindBurst has a few members of a room send through node now.
	RewindBurst(node int)
}

func (redisRewind) Name() FaultKind { return model.FaultRedisRewind }

func (redisRewind) Budget() Budget {
	return Budget{Knob: string(model.FaultRedisRewind), Flag: "max-redis-rewinds", Usage: "most Redis rewinds (a snapshot restored, with a node restarted across it) per run", MixRank: 17,
		Bound: func(b *FaultBounds) *int { return &b.RedisRewinds }, Mix: func(m *FaultMix) *int { return &m.RedisRewinds },
		// A third of a sweep's seeds, from the sub-seed redis-rewind-sweep.
		Sweep: &SweepWorld{OneIn: 3, Bound: 1}}
}

func (redisRewind) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultRedisRewind, Node: r.IntN(w.Nodes), For: Dur(r, RewindMin, RewindMax)}, true
}

func (redisRewind) Follow(f Fault) (Fault, bool) { return windowEnd(f) }

func (redisRewind) Trace(f Fault) string {
	if f.End {
		return fmt.Sprintf("%s n%d over", f.Kind, f.Node+1)
	}
	return fmt.Sprintf("%s n%d for %v", f.Kind, f.Node+1, f.For)
}

func (redisRewind) Head(f Fault) (string, []string) { return windowHead(f) }

func (redisRewind) Heads() []string { return []string{string(model.FaultRedisRewind)} }

func (redisRewind) ReadHead(h *headReader, _ string, f *Fault) {
	readWindow(h, model.FaultRedisRewind, f)
}

// A window of a node's fault (a rewind, a failover) is two faults: the
// start, lasting For, and its End, its follow-up. Their plan text is
// "<kind> <node> for <For>" and "<kind> <node> over".

func windowEnd(f Fault) (Fault, bool) {
	if f.End {
		return Fault{}, false
	}
	return Fault{At: f.At + f.For, Kind: f.Kind, Node: f.Node, End: true}, true
}

func windowHead(f Fault) (string, []string) {
	if f.End {
		return fmt.Sprintf("%s %s over", f.Kind, formatNode(f.Node)), []string{"node", "end"}
	}
	return fmt.Sprintf("%s %s for %v", f.Kind, formatNode(f.Node), f.For), []string{"node", "for"}
}

func readWindow(h *headReader, kind FaultKind, f *Fault) {
	f.Kind = kind
	f.Node = h.node("node")
	if len(h.toks) > 0 && h.toks[0] == "over" {
		h.toks, f.End = h.toks[1:], true
	} else {
		f.For = h.dur()
	}
}

// Touches: none of its own; the panel records the rewind (RedisSnapshot
// and RedisRestore) and each restart records itself.
func (redisRewind) Touches(Fault) Touch { return TouchNone }

func (redisRewind) Apply(p Panel, f Fault) {
	rp, ok := p.(rewindPanel)
	if !ok {
		return
	}
	restart := func() { p.Replace(string(model.FaultRedisRewind), f.Node, p.Protocol(f.Node), false, 0) }
	if f.End {
		rp.RedisRestore(f.Node)
		restart()
		rp.RewindBurst(f.Node)
		return
	}
	rp.RedisSnapshot(f.Node)
	restart()
	restart()
	rp.RewindBurst(f.Node)
}

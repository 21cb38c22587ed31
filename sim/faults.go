package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
)

// DrawMix draws a seed's fault mix within b. Each knob draws from its own
// sub-seed, and always draws, so that changing one kind's bound (turning
// it off, say) leaves every other kind's draw as it was.
func DrawMix(seed Seed, b FaultBounds) FaultMix {
	p := func(kind string, max float64) float64 {
		r := seed.Derive(kind).Rand()
		on, u := r.IntN(2) == 1, r.Float64()
		if max <= 0 || !on {
			return 0
		}
		return float64(int(u*max*1000)) / 1000
	}
	n := func(kind string, max int) int {
		r := seed.Derive(kind).Rand()
		on, u := r.IntN(2) == 1, r.Float64()
		if max <= 0 || !on {
			return 0
		}
		return 1 + int(u*float64(max))
	}
	return FaultMix{
		DropRequest: p(drawDropRequest, b.Network), DropResponse: p(drawDropResponse, b.Network),
		Duplicate: p(drawDuplicate, b.Network), Delay: p(drawDelay, b.Network),
		RedisError:    p("redis-err", b.RedisErrors),
		Crashes:       n("crash", b.Crashes),
		Partitions:    n("partition", b.Partitions),
		Pauses:        n("pause", b.Pauses),
		RedisOutages:  n("redis-outage", b.RedisOutages),
		RouteFlushes:  n("route-flush", b.RouteFlushes),
		Vanishes:      n("vanish", b.Vanishes),
		SlowConsumers: n("slow-consumer", b.SlowConsumers),
		RedisSpikes:   n("redis-spike", b.RedisSpikes),
		Forgeries:     n("forge", b.Forgeries),
		Steals:        n(string(model.FaultSteal), b.Steals),
		RecvBreak:     p(drawRecvBreak, b.RecvBreaks),
		Blips:         n("blip", b.Blips),
	}
}

// PlanFaults places the mix's timed faults inside [start, end). Each kind
// is placed by its own generator (a sub-seed of seed), so that the plan of
// one kind does not depend on how many faults of the others the mix holds.
func PlanFaults(seed Seed, m FaultMix, nodes int, users []string, start, end time.Duration) []Fault {
	span := end - start
	if span <= 0 {
		return nil
	}
	var fs []Fault
	// Each kind's generator is seeded from the kind's name.
	plan := func(kind model.FaultKind, count int, place func(r *rand.Rand, at time.Duration) (Fault, bool)) {
		r := seed.Derive(string(kind)).Rand()
		for range count {
			at := start + time.Duration(r.Int64N(int64(span))).Truncate(time.Millisecond)
			if f, ok := place(r, at); ok {
				fs = append(fs, f)
			}
		}
	}
	dur := func(r *rand.Rand, lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo))).Truncate(time.Millisecond)
	}
	plan(model.FaultCrash, m.Crashes, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		return Fault{At: at, Kind: model.FaultCrash, Node: r.IntN(nodes), For: dur(r, time.Second, 10*time.Second)}, true
	})
	plan(model.FaultPartition, m.Partitions, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		f := Fault{At: at, Kind: model.FaultPartition, Node: r.IntN(nodes), Peer: -1, For: dur(r, time.Second, 10*time.Second)}
		if nodes > 1 && r.IntN(3) > 0 {
			f.Peer = (f.Node + 1 + r.IntN(nodes-1)) % nodes
			f.OneWay = r.IntN(2) == 0
		}
		return f, true
	})
	plan(model.FaultPause, m.Pauses, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		return Fault{At: at, Kind: model.FaultPause, Node: r.IntN(nodes), For: dur(r, 100*time.Millisecond, 3*time.Second)}, true
	})
	plan(model.FaultRedisOutage, m.RedisOutages, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		return Fault{At: at, Kind: model.FaultRedisOutage, For: dur(r, 100*time.Millisecond, 2*time.Second)}, true
	})
	plan(model.FaultRedisSpike, m.RedisSpikes, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		return Fault{At: at, Kind: model.FaultRedisSpike, For: dur(r, 500*time.Millisecond, 3*time.Second)}, true
	})
	plan(model.FaultRouteFlush, m.RouteFlushes, func(_ *rand.Rand, at time.Duration) (Fault, bool) {
		return Fault{At: at, Kind: model.FaultRouteFlush}, true
	})
	plan(model.FaultVanish, m.Vanishes, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		if len(users) == 0 {
			return Fault{}, false
		}
		return Fault{At: at, Kind: model.FaultVanish, User: users[r.IntN(len(users))]}, true
	})
	plan(model.FaultSlow, m.SlowConsumers, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		if len(users) == 0 {
			return Fault{}, false
		}
		return Fault{At: at, Kind: model.FaultSlow, User: users[r.IntN(len(users))], For: dur(r, time.Second, 5*time.Second)}, true
	})
	plan(model.FaultBlip, m.Blips, func(r *rand.Rand, at time.Duration) (Fault, bool) {
		if nodes < 2 {
			return Fault{}, false
		}
		a := r.IntN(nodes)
		return Fault{At: at, Kind: model.FaultBlip, Node: a, Peer: (a + 1 + r.IntN(nodes-1)) % nodes, For: dur(r, blipMin, blipMax)}, true
	})
	// A crash is followed by its restart, a partition by its heal and a
	// blip by its end.
	for _, f := range fs {
		switch f.Kind {
		case model.FaultBlip:
			fs = append(fs, Fault{At: f.At + f.For, Kind: model.FaultBlip, Node: f.Node, Peer: f.Peer, End: true})
		case model.FaultCrash:
			fs = append(fs, Fault{At: f.At + f.For, Kind: model.FaultRestart, Node: f.Node})
		case model.FaultPartition:
			fs = append(fs, Fault{At: f.At + f.For, Kind: model.FaultHeal, Node: f.Node, Peer: f.Peer, OneWay: f.OneWay})
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// A blip lasts blipMin to blipMax: shorter than the default give-up
// budget (GiveUpBudget: 300 ms), so a stream writer that backs off as it
// should rides it out, and longer than the first back-off (100 ms) often
// enough that the second attempt meets it too.
const (
	blipMin = 20 * time.Millisecond
	blipMax = 250 * time.Millisecond
)

// decide reports whether a fault of probability p hits the op with key, on
// its k-th occurrence: a function of identity, not of arrival order.
func decide(seed Seed, p float64, key string, k int) bool {
	if p <= 0 {
		return false
	}
	return seed.Unit(fmt.Sprintf("%s#%d", key, k)) < p
}

// netDraws are the seed's network-fault draws for one operation (key): the
// same for a relay call and for a relay stream's write or ack. Occurrences
// are counted only when the mix can draw a fault at all (as in redisGate).
type netDraws struct {
	c   *Cluster
	key string
	k   int
}

func (c *Cluster) netDraws(key string) netDraws {
	d := netDraws{c: c, key: key}
	if c.faults.on && c.faults.mix.NetFaults() {
		d.k = c.faults.occurrence("net|" + key)
	}
	return d
}

// hit draws fault kind ("drop-req", "drop-resp", "dup", "delay") of
// probability p.
func (d netDraws) hit(kind string, p float64) bool {
	return d.c.faults.on && decide(d.c.seeds.faults.Derive("net").Derive(kind), p, d.key, d.k)
}

// delayBy is how long a drawn delay holds the operation: 1 ms to 2 s.
func (d netDraws) delayBy() time.Duration {
	return time.Duration(1+d.c.seeds.faults.Derive("net").Derive("delay-by").Unit(d.key)*2000) * time.Millisecond
}

// MarkOverlaps draws, for each crash and upgrade of a plan, whether it
// overlaps incarnations (probability p) and the stopping incarnation's
// lag (0 to maxStopLag, in whole milliseconds), from its own seed: every
// crash and upgrade draws both, so the draws of one fault do not depend
// on p.
func MarkOverlaps(seed Seed, fs []Fault, p float64) {
	r := seed.Rand()
	for i := range fs {
		if fs[i].Kind == model.FaultCrash || fs[i].Kind == model.FaultUpgrade {
			on, lag := r.Float64() < p, time.Duration(r.IntN(int(maxStopLag/time.Millisecond)+1))*time.Millisecond
			if on {
				fs[i].Overlap, fs[i].Lag = true, lag
			}
		}
	}
}

// maxStopLag is the most an overlapping restart's stopping incarnation is
// held after each command of its stop.
const maxStopLag = 20 * time.Millisecond

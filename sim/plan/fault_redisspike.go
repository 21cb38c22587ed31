package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// redisSpike makes every Redis command slow (RedisSpikeLatency more) for
// a while.
type redisSpike struct{ noFollow }

// RedisSpikeLatency is what a latency spike adds to every Redis command.
const RedisSpikeLatency = 50 * time.Millisecond

func (redisSpike) Name() FaultKind { return model.FaultRedisSpike }

func (redisSpike) Budget() Budget {
	return Budget{Knob: "redis-spike", Flag: "max-redis-spikes", Usage: "most Redis latency spikes per run", MixRank: 12,
		Bound: func(b *FaultBounds) *int { return &b.RedisSpikes }, Mix: func(m *FaultMix) *int { return &m.RedisSpikes }}
}

func (redisSpike) Place(r *rand.Rand, at time.Duration, _ World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultRedisSpike, For: Dur(r, 500*time.Millisecond, 3*time.Second)}, true
}

func (redisSpike) Trace(f Fault) string {
	return fmt.Sprintf("%s +%v for %v", f.Kind, RedisSpikeLatency, f.For)
}

func (redisSpike) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s for %v", f.Kind, f.For), []string{"for"}
}

func (redisSpike) Heads() []string { return []string{string(model.FaultRedisSpike)} }

func (redisSpike) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultRedisSpike
	f.For = h.dur()
}

func (redisSpike) Touches(Fault) Touch { return TouchRedis }

func (redisSpike) Apply(p Panel, f Fault) {
	p.RedisSpike(p.Now(), p.Now()+f.For, RedisSpikeLatency)
}

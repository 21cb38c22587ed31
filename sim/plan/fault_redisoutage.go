package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// redisOutage fails every Redis command for a while.
type redisOutage struct{ noFollow }

func (redisOutage) Name() FaultKind { return model.FaultRedisOutage }

func (redisOutage) Budget() Budget {
	return Budget{Knob: "redis-outage", Flag: "max-redis-outages", Usage: "most Redis outages per run", MixRank: 8,
		Bound: func(b *FaultBounds) *int { return &b.RedisOutages }, Mix: func(m *FaultMix) *int { return &m.RedisOutages }}
}

func (redisOutage) Place(r *rand.Rand, at time.Duration, _ World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultRedisOutage, For: Dur(r, 100*time.Millisecond, 2*time.Second)}, true
}

func (redisOutage) Trace(f Fault) string { return fmt.Sprintf("%s for %v", f.Kind, f.For) }

func (redisOutage) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s for %v", f.Kind, f.For), []string{"for"}
}

func (redisOutage) Heads() []string { return []string{string(model.FaultRedisOutage)} }

func (redisOutage) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultRedisOutage
	f.For = h.dur()
}

func (redisOutage) Touches(Fault) Touch { return TouchRedis }

func (redisOutage) Apply(p Panel, f Fault) { p.RedisOutage(p.Now(), p.Now()+f.For) }

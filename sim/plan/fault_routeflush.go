package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// routeFlush deletes every routing entry.
type routeFlush struct{ noFollow }

func (routeFlush) Name() FaultKind { return model.FaultRouteFlush }

func (routeFlush) Budget() Budget {
	return Budget{Knob: "route-flush", Flag: "max-route-flushes", Usage: "most flushes of every routing entry per run", MixRank: 9,
		Bound: func(b *FaultBounds) *int { return &b.RouteFlushes }, Mix: func(m *FaultMix) *int { return &m.RouteFlushes }}
}

func (routeFlush) Place(_ *rand.Rand, at time.Duration, _ World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultRouteFlush}, true
}

func (routeFlush) Trace(f Fault) string { return fmt.Sprintf("%s for %v", f.Kind, f.For) }

func (routeFlush) Head(f Fault) (string, []string) { return string(f.Kind), nil }

func (routeFlush) Heads() []string { return []string{string(model.FaultRouteFlush)} }

func (routeFlush) ReadHead(_ *headReader, _ string, f *Fault) { f.Kind = model.FaultRouteFlush }

func (routeFlush) Touches(Fault) Touch { return TouchRedis }

func (routeFlush) Apply(p Panel, _ Fault) { p.FlushRoutes() }

package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// supersede restarts a node while its old incarnation lives on for For,
// cut off from its peers and clients but not from Redis (an orchestrator
// that started a replacement for a process it thought gone): the old one
// keeps its refresh loop, so it heartbeats after the new one registered,
// then stops gracefully.
type supersede struct{ noFollow }

// A superseded incarnation lingers longer than a refresh period (a third
// of the registry TTL: 10 s by default), so it heartbeats at least once
// over the new incarnation's entry.
const (
	SupersedeMin = 12 * time.Second
	SupersedeMax = 25 * time.Second
)

func (supersede) Name() FaultKind { return model.FaultSupersede }

func (supersede) Budget() Budget {
	return Budget{Knob: "supersede", Flag: "max-supersedes", Usage: "most restarts whose old incarnation lives on, cut off from its peers but not from Redis, per run (off by default; a wide run draws up to 1)", MixRank: 19,
		Bound: func(b *FaultBounds) *int { return &b.Supersedes }, Mix: func(m *FaultMix) *int { return &m.Supersedes }}
}

func (supersede) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultSupersede, Node: r.IntN(w.Nodes), For: Dur(r, SupersedeMin, SupersedeMax)}, true
}

func (supersede) Trace(f Fault) string {
	return fmt.Sprintf("%s n%d, the old incarnation lingering for %v", f.Kind, f.Node+1, f.For)
}

func (supersede) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s for %v", f.Kind, formatNode(f.Node), f.For), []string{"node", "for"}
}

func (supersede) Heads() []string { return []string{string(model.FaultSupersede)} }

func (supersede) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultSupersede
	f.Node = h.node("node")
	f.For = h.dur()
}

// Touches: the cluster records it itself, on its node, until the old
// incarnation has stopped.
func (supersede) Touches(Fault) Touch { return TouchNone }

func (supersede) Apply(p Panel, f Fault) { p.Supersede(f.Node, f.For) }

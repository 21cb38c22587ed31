package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// pause holds every operation of a node for a while.
type pause struct{ noFollow }

func (pause) Name() FaultKind { return model.FaultPause }

func (pause) Budget() Budget {
	return Budget{Knob: "pause", Flag: "max-pauses", Usage: "most node pauses per run", MixRank: 7,
		Bound: func(b *FaultBounds) *int { return &b.Pauses }, Mix: func(m *FaultMix) *int { return &m.Pauses }}
}

func (pause) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultPause, Node: r.IntN(w.Nodes), For: Dur(r, 100*time.Millisecond, 3*time.Second)}, true
}

func (pause) Trace(f Fault) string {
	if f.Overlap {
		return fmt.Sprintf("restart n%d overlapping (lag %v)", f.Node+1, f.Lag)
	}
	return fmt.Sprintf("%s n%d for %v", f.Kind, f.Node+1, f.For)
}

func (pause) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s for %v", f.Kind, formatNode(f.Node), f.For), []string{"node", "for"}
}

func (pause) Heads() []string { return []string{string(model.FaultPause)} }

func (pause) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultPause
	f.Node = h.node("node")
	f.For = h.dur()
}

func (pause) Touches(Fault) Touch { return TouchNode }

func (pause) Apply(p Panel, f Fault) { p.Pause(f.Node, p.Now()+f.For) }

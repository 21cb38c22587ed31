package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// crash stops a node as a process does, until its restart (a follow-up
// fault); with Overlap it is a graceful restart whose new incarnation
// starts before the old one has finished stopping.
type crash struct{}

func (crash) Name() FaultKind { return model.FaultCrash }

func (crash) Budget() Budget {
	return Budget{Knob: "crash", Flag: "max-crashes", Usage: "most node crashes per run", MixRank: 5,
		Bound: func(b *FaultBounds) *int { return &b.Crashes }, Mix: func(m *FaultMix) *int { return &m.Crashes }}
}

func (crash) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	return Fault{At: at, Kind: model.FaultCrash, Node: r.IntN(w.Nodes), For: Dur(r, time.Second, 10*time.Second)}, true
}

func (crash) Follow(f Fault) (Fault, bool) {
	return Fault{At: f.At + f.For, Kind: model.FaultRestart, Node: f.Node}, true
}

func (crash) Trace(f Fault) string {
	if f.Overlap {
		return fmt.Sprintf("restart n%d overlapping (lag %v)", f.Node+1, f.Lag)
	}
	return fmt.Sprintf("%s n%d for %v", f.Kind, f.Node+1, f.For)
}

func (crash) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s for %v", f.Kind, formatNode(f.Node), f.For), []string{"node", "for"}
}

func (crash) Heads() []string { return []string{string(model.FaultCrash)} }

func (crash) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultCrash
	f.Node = h.node("node")
	f.For = h.dur()
}

func (crash) Touches(Fault) Touch { return TouchNone }

func (crash) Apply(p Panel, f Fault) {
	if f.Overlap {
		p.Replace(string(model.FaultRestart), f.Node, p.Protocol(f.Node), true, f.Lag)
		return
	}
	p.Crash(f.Node)
}

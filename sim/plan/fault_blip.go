package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// blip is a short cut of one link between two nodes, shorter than a
// stream writer's give-up budget; its end (End) is its follow-up.
type blip struct{}

// A blip lasts BlipMin to BlipMax: shorter than the default give-up
// budget (GiveUpBudget: 300 ms), so a stream writer that backs off as it
// should rides it out, and longer than the first back-off (100 ms) often
// enough that the second attempt meets it too.
const (
	BlipMin = 20 * time.Millisecond
	BlipMax = 250 * time.Millisecond
)

func (blip) Name() FaultKind { return model.FaultBlip }

func (blip) Budget() Budget {
	return Budget{Knob: "blip", Flag: "max-blips", Usage: "most short cuts of one node-to-node link (shorter than a stream writer's give-up budget) per run", MixRank: 16,
		Bound: func(b *FaultBounds) *int { return &b.Blips }, Mix: func(m *FaultMix) *int { return &m.Blips }}
}

func (blip) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	if w.Nodes < 2 {
		return Fault{}, false
	}
	a := r.IntN(w.Nodes)
	return Fault{At: at, Kind: model.FaultBlip, Node: a, Peer: (a + 1 + r.IntN(w.Nodes-1)) % w.Nodes, For: Dur(r, BlipMin, BlipMax)}, true
}

func (blip) Follow(f Fault) (Fault, bool) {
	return Fault{At: f.At + f.For, Kind: model.FaultBlip, Node: f.Node, Peer: f.Peer, End: true}, true
}

func (blip) Trace(f Fault) string {
	if f.End {
		return fmt.Sprintf("blip n%d<->n%d over", f.Node+1, f.Peer+1)
	}
	return fmt.Sprintf("blip n%d<->n%d for %v", f.Node+1, f.Peer+1, f.For)
}

func (blip) Head(f Fault) (string, []string) {
	n, p := formatNode(f.Node), formatNode(f.Peer)
	if f.End {
		return fmt.Sprintf("blip %s<->%s over", n, p), []string{"node", "peer", "end"}
	}
	return fmt.Sprintf("blip %s<->%s for %v", n, p, f.For), []string{"node", "peer", "for"}
}

func (blip) Heads() []string { return []string{string(model.FaultBlip)} }

func (blip) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultBlip
	f.Node, f.Peer = h.pair("<->")
	if len(h.toks) > 0 && h.toks[0] == "over" {
		h.toks, f.End = h.toks[1:], true
	} else {
		f.For = h.dur()
	}
}

func (blip) Touches(Fault) Touch { return TouchNone }

func (blip) Apply(p Panel, f Fault) { p.Blip(f) }

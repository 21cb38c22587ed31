package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// partition cuts the links between two nodes, both ways or one (OneWay:
// Node -> Peer only), or between a node and every other (Peer -1), until
// its heal (a follow-up fault). Its plan text starts "partition",
// "cut" or "isolate".
type partition struct{}

func (partition) Name() FaultKind { return model.FaultPartition }

func (partition) Budget() Budget {
	return Budget{Knob: "partition", Flag: "max-partitions", Usage: "most partitions per run", MixRank: 6,
		Bound: func(b *FaultBounds) *int { return &b.Partitions }, Mix: func(m *FaultMix) *int { return &m.Partitions }}
}

func (partition) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	f := Fault{At: at, Kind: model.FaultPartition, Node: r.IntN(w.Nodes), Peer: -1, For: Dur(r, time.Second, 10*time.Second)}
	if w.Nodes > 1 && r.IntN(3) > 0 {
		f.Peer = (f.Node + 1 + r.IntN(w.Nodes-1)) % w.Nodes
		f.OneWay = r.IntN(2) == 0
	}
	return f, true
}

func (partition) Follow(f Fault) (Fault, bool) {
	return Fault{At: f.At + f.For, Kind: model.FaultHeal, Node: f.Node, Peer: f.Peer, OneWay: f.OneWay}, true
}

func (partition) Trace(f Fault) string {
	switch {
	case f.Peer < 0:
		return fmt.Sprintf("isolate n%d for %v", f.Node+1, f.For)
	case f.OneWay:
		return fmt.Sprintf("cut n%d->n%d for %v", f.Node+1, f.Peer+1, f.For)
	}
	return fmt.Sprintf("partition n%d<->n%d for %v", f.Node+1, f.Peer+1, f.For)
}

func (partition) Head(f Fault) (string, []string) {
	n, p := formatNode(f.Node), formatNode(f.Peer)
	switch {
	case f.Peer == -1:
		return fmt.Sprintf("isolate %s for %v", n, f.For), []string{"node", "peer", "for"}
	case f.OneWay:
		return fmt.Sprintf("cut %s->%s for %v", n, p, f.For), []string{"node", "peer", "one-way", "for"}
	}
	return fmt.Sprintf("partition %s<->%s for %v", n, p, f.For), []string{"node", "peer", "for"}
}

func (partition) Heads() []string { return []string{string(model.FaultPartition), "isolate", "cut"} }

func (partition) ReadHead(h *headReader, word string, f *Fault) {
	f.Kind = model.FaultPartition
	switch word {
	case "isolate":
		f.Node, f.Peer = h.node("node"), -1
	case "cut":
		f.OneWay = true
		f.Node, f.Peer = h.pair("->")
	default:
		f.Node, f.Peer = h.pair("<->")
	}
	f.For = h.dur()
}

func (partition) Touches(Fault) Touch { return TouchLinks }

func (partition) Apply(p Panel, f Fault) { p.Cut(f) }

package plan

import (
	"fmt"
	"strings"

	"github.com/relaysim/relaysim/model"
)

// heal restores a partition's links: a partition's follow-up, not drawn
// by count.
type heal struct {
	noBudget
	noPlace
	noFollow
}

func (heal) Name() FaultKind { return model.FaultHeal }

func (heal) Trace(f Fault) string {
	if f.Peer < 0 {
		return fmt.Sprintf("heal isolated n%d", f.Node+1)
	}
	return fmt.Sprintf("heal n%d/n%d", f.Node+1, f.Peer+1)
}

func (heal) Head(f Fault) (string, []string) {
	n, p := formatNode(f.Node), formatNode(f.Peer)
	switch {
	case f.Peer == -1:
		return "heal isolated " + n, []string{"node", "peer"}
	case f.OneWay:
		return fmt.Sprintf("heal %s->%s", n, p), []string{"node", "peer", "one-way"}
	}
	return fmt.Sprintf("heal %s<->%s", n, p), []string{"node", "peer"}
}

func (heal) Heads() []string { return []string{string(model.FaultHeal)} }

// ReadHead reads "isolated nA", "nA->nB" or "nA<->nB".
func (heal) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind = model.FaultHeal
	if len(h.toks) > 0 && h.toks[0] == "isolated" {
		h.toks = h.toks[1:]
		f.Node, f.Peer = h.node("node"), -1
		return
	}
	if len(h.toks) > 0 && strings.Contains(h.toks[0], "<->") {
		f.Node, f.Peer = h.pair("<->")
		return
	}
	f.OneWay = true
	f.Node, f.Peer = h.pair("->")
}

func (heal) Touches(Fault) Touch { return TouchNone }

func (heal) Apply(p Panel, f Fault) { p.Heal(f) }

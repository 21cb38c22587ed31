package plan

import (
	"fmt"

	"github.com/relaysim/relaysim/model"
)

// restart brings a crashed node back with a new epoch: a crash's
// follow-up, not drawn by count.
type restart struct {
	noBudget
	noPlace
	noFollow
}

func (restart) Name() FaultKind { return model.FaultRestart }

func (restart) Trace(f Fault) string { return fmt.Sprintf("restart n%d", f.Node+1) }

func (restart) Head(f Fault) (string, []string) {
	return "restart " + formatNode(f.Node), []string{"node"}
}

func (restart) Heads() []string { return []string{string(model.FaultRestart)} }

func (restart) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.Node = model.FaultRestart, h.node("node")
}

func (restart) Touches(Fault) Touch { return TouchNone }

func (restart) Apply(p Panel, f Fault) { p.Restart(f.Node) }

package plan

import (
	"fmt"
	"strings"

	"github.com/relaysim/relaysim/model"
)

// upgrade restarts a node with another protocol version (sim's upgrade
// plan draws it, not the mix).
type upgrade struct {
	noBudget
	noPlace
	noFollow
}

func (upgrade) Name() FaultKind { return model.FaultUpgrade }

func (upgrade) Trace(f Fault) string {
	if f.Overlap {
		return fmt.Sprintf("upgrade n%d to v%d overlapping (lag %v)", f.Node+1, f.Protocol, f.Lag)
	}
	return fmt.Sprintf("upgrade n%d to v%d", f.Node+1, f.Protocol)
}

func (upgrade) Head(f Fault) (string, []string) {
	return fmt.Sprintf("upgrade %s to v%d", formatNode(f.Node), f.Protocol), []string{"node", "protocol"}
}

func (upgrade) Heads() []string { return []string{string(model.FaultUpgrade)} }

func (upgrade) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.Node = model.FaultUpgrade, h.node("node")
	h.word("to")
	if t := h.next("version vN"); h.err == nil {
		if !strings.HasPrefix(t, "v") {
			h.err = fmt.Errorf("version %q: want vN", t)
		} else if f.Protocol, h.err = parseCount(t[1:]); h.err != nil {
			h.err = fmt.Errorf("version %q: want vN", t)
		}
	}
}

func (upgrade) Touches(Fault) Touch { return TouchNone }

func (upgrade) Apply(p Panel, f Fault) { p.Replace("upgrade", f.Node, f.Protocol, f.Overlap, f.Lag) }

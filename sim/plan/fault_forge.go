package plan

import (
	"fmt"

	"github.com/relaysim/relaysim/model"
)

// forge is a client call with a forged credential (Forgery). The mix
// draws its count; sim/forge.go places them (it needs the workload's
// rooms), so Place stays there.
type forge struct {
	noPlace
	noFollow
}

func (forge) Name() FaultKind { return model.FaultForge }

func (forge) Budget() Budget {
	return Budget{Knob: "forge", Flag: "max-forgeries", Usage: "most calls with a forged credential (any Chat or Relay method) per run", MixRank: 13,
		Bound: func(b *FaultBounds) *int { return &b.Forgeries }, Mix: func(m *FaultMix) *int { return &m.Forgeries }}
}

func (forge) Trace(f Fault) string { return fmt.Sprintf("forge %s by %s", f.Forge, f.User) }

func (forge) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s %s", f.Kind, quoteName(f.User), quoteName(f.Forge.Call)), []string{"user", "call"}
}

func (forge) Heads() []string { return []string{string(model.FaultForge)} }

func (forge) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.User = model.FaultForge, h.name("user")
	f.Forge.Call = h.name("forged call")
}

func (forge) Touches(Fault) Touch { return TouchNone }

func (forge) Apply(p Panel, f Fault) { p.Forge(f.Forge, f.User) }

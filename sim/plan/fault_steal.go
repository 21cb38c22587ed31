package plan

import (
	"fmt"

	"github.com/relaysim/relaysim/model"
)

// steal is a client's own send with another user's message id (Steal).
// The mix draws its count; sim/steal.go places them (it needs the
// workload's sends), so Place stays there.
type steal struct {
	noPlace
	noFollow
}

func (steal) Name() FaultKind { return model.FaultSteal }

func (steal) Budget() Budget {
	return Budget{Knob: string(model.FaultSteal), Flag: "max-steals", Usage: "most sends with another user's client message id per run", MixRank: 14,
		Bound: func(b *FaultBounds) *int { return &b.Steals }, Mix: func(m *FaultMix) *int { return &m.Steals }}
}

func (steal) Trace(f Fault) string { return fmt.Sprintf("steal %s by %s", f.Steal, f.User) }

func (steal) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s %s %s of %s", f.Kind, quoteName(f.User), quoteName(f.Steal.Room), quoteName(f.Steal.MsgID), quoteName(f.Steal.Victim)),
		[]string{"user", "room", "msg", "victim"}
}

func (steal) Heads() []string { return []string{string(model.FaultSteal)} }

func (steal) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.User = model.FaultSteal, h.name("user")
	f.Steal.Room, f.Steal.MsgID = h.name("room"), h.name("message id")
	h.word("of")
	f.Steal.Victim = h.name("victim")
}

func (steal) Touches(Fault) Touch { return TouchNone }

func (steal) Apply(p Panel, f Fault) { p.DoNow(f.Steal.Action(p.Now(), f.User)) }

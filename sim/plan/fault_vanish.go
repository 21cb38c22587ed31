package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// vanish makes a client stop reading without closing its stream.
type vanish struct{ noFollow }

func (vanish) Name() FaultKind { return model.FaultVanish }

func (vanish) Budget() Budget {
	return Budget{Knob: "vanish", Flag: "max-vanishes", Usage: "most clients that stop reading per run", MixRank: 10,
		Bound: func(b *FaultBounds) *int { return &b.Vanishes }, Mix: func(m *FaultMix) *int { return &m.Vanishes }}
}

func (vanish) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	if len(w.Users) == 0 {
		return Fault{}, false
	}
	return Fault{At: at, Kind: model.FaultVanish, User: w.Users[r.IntN(len(w.Users))]}, true
}

func (vanish) Trace(f Fault) string { return fmt.Sprintf("%s %s", f.Kind, f.User) }

func (vanish) Head(f Fault) (string, []string) {
	return string(f.Kind) + " " + quoteName(f.User), []string{"user"}
}

func (vanish) Heads() []string { return []string{string(model.FaultVanish)} }

func (vanish) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.User = model.FaultVanish, h.name("user")
}

func (vanish) Touches(Fault) Touch { return TouchUser }

func (vanish) Apply(p Panel, f Fault) { p.Do(Action{At: p.Now(), User: f.User, Kind: ActVanish}) }

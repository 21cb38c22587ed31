package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// flood gives a user a long history: the user goes offline while the
// other members of one of its rooms send it a backlog of FloodMin to
// FloodMax messages, then it connects again and replays them; For spans
// both (the harness leaves the replay its last 8 s).
type flood struct{ noFollow }

// A flood's drawn backlog, before the harness caps it at 10 sends a
// second over the time its user is offline inside the fault phase (at
// most ~70 in the default 10 s phase): a faulted wide run's replay page
// is 16-64, so the backlog spans pages.
const (
	FloodMin = 300
	FloodMax = 1200
)

func (flood) Name() FaultKind { return model.FaultFlood }

func (flood) Budget() Budget {
	return Budget{Knob: "flood", Flag: "max-floods", Usage: "most users that go offline while their room gets a backlog of messages, then replay it, per run (off by default; a wide run draws up to 1)", MixRank: 18,
		Bound: func(b *FaultBounds) *int { return &b.Floods }, Mix: func(m *FaultMix) *int { return &m.Floods }}
}

func (flood) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	if len(w.Users) == 0 {
		return Fault{}, false
	}
	return Fault{At: at, Kind: model.FaultFlood, User: w.Users[r.IntN(len(w.Users))], Node: r.IntN(w.Nodes), For: Dur(r, 20*time.Second, 40*time.Second)}, true
}

func (flood) Trace(f Fault) string {
	return fmt.Sprintf("%s %s for %v, back on n%d", f.Kind, f.User, f.For, f.Node+1)
}

func (flood) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s for %v on %s", f.Kind, quoteName(f.User), f.For, formatNode(f.Node)), []string{"user", "for", "node"}
}

func (flood) Heads() []string { return []string{string(model.FaultFlood)} }

func (flood) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.User = model.FaultFlood, h.name("user")
	f.For = h.dur()
	h.word("on")
	f.Node = h.node("node")
}

func (flood) Touches(Fault) Touch { return TouchUser }

func (flood) Apply(p Panel, f Fault) { p.Flood(f) }

package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// slow makes a client read its deliveries slowly for a while. Its mix
// knob and draw say "slow-consumer", its bound SlowConsumers: the names
// the seeds' draws derive from, kept.
type slow struct{ noFollow }

func (slow) Name() FaultKind { return model.FaultSlow }

func (slow) Budget() Budget {
	return Budget{Knob: "slow-consumer", Flag: "max-slow-consumers", Usage: "most slow consumers per run", MixRank: 11,
		Bound: func(b *FaultBounds) *int { return &b.SlowConsumers }, Mix: func(m *FaultMix) *int { return &m.SlowConsumers }}
}

func (slow) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	if len(w.Users) == 0 {
		return Fault{}, false
	}
	return Fault{At: at, Kind: model.FaultSlow, User: w.Users[r.IntN(len(w.Users))], For: Dur(r, time.Second, 5*time.Second)}, true
}

func (slow) Trace(f Fault) string { return fmt.Sprintf("%s %s", f.Kind, f.User) }

func (slow) Head(f Fault) (string, []string) {
	return fmt.Sprintf("%s %s for %v", f.Kind, quoteName(f.User), f.For), []string{"user", "for"}
}

func (slow) Heads() []string { return []string{string(model.FaultSlow)} }

func (slow) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.User = model.FaultSlow, h.name("user")
	f.For = h.dur()
}

func (slow) Touches(Fault) Touch { return TouchUser }

func (slow) Apply(p Panel, f Fault) {
	p.Do(Action{At: p.Now(), User: f.User, Kind: ActSlow, For: f.For})
}

package plan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relaysim/relaysim/model"
)

// stall makes a client's app hang with its connection up: it stops
// reading its deliveries (the HTTP/2 window and then its outbox on the
// node fill) but answers keep-alives, for For (0: until the liveness
// phase). With a Lag it first goes offline for Lag while a burst of large
// messages is sent to one of its rooms, and comes back stalled: its
// replay outgrows its outbox and the window (a stall before a replay);
// without, it stalls on its open stream (after a replay, or during one).
// Off by default (its bound is 0): the sweep's stall world (Budget.Sweep)
// turns it on.
type stall struct{ noFollow }

func (stall) Name() FaultKind { return model.FaultStall }

func (stall) Budget() Budget {
	return Budget{Knob: "stall", Flag: "max-stalls", Usage: "most clients that stop reading with their connection up per run", MixRank: 20,
		Bound: func(b *FaultBounds) *int { return &b.Stalls }, Mix: func(m *FaultMix) *int { return &m.Stalls },
		// The sweep's stall world: half its seeds, up to two stalls each.
		Sweep: &SweepWorld{Name: "stall-world", OneIn: 2, Bound: 2}}
}

func (stall) Place(r *rand.Rand, at time.Duration, w World) (Fault, bool) {
	if len(w.Users) == 0 {
		return Fault{}, false
	}
	// Early in the fault phase (its first third or so): what a stall
	// costs the others shows while the load goes on, before the liveness
	// phase ends every stall.
	f := Fault{At: 200*time.Millisecond + at/3, Kind: model.FaultStall, User: w.Users[r.IntN(len(w.Users))]}
	if r.IntN(3) > 0 {
		f.Lag = Dur(r, 500*time.Millisecond, 3*time.Second)
	}
	if r.IntN(3) > 0 {
		f.For = Dur(r, 2*time.Second, 20*time.Second)
	}
	return f, true
}

func (stall) Trace(f Fault) string {
	s := fmt.Sprintf("%s %s", f.Kind, f.User)
	if f.Lag > 0 {
		s += fmt.Sprintf(" after %v offline", f.Lag)
	}
	if f.For > 0 {
		return s + fmt.Sprintf(" for %v", f.For)
	}
	return s + " until the heal"
}

func (stall) Head(f Fault) (string, []string) {
	return string(f.Kind) + " " + quoteName(f.User), []string{"user"}
}

func (stall) Heads() []string { return []string{string(model.FaultStall)} }

func (stall) ReadHead(h *headReader, _ string, f *Fault) {
	f.Kind, f.User = model.FaultStall, h.name("user")
}

func (stall) Touches(Fault) Touch { return TouchUser }

func (stall) Apply(p Panel, f Fault) { p.Stall(f.User, f.Lag, f.For) }

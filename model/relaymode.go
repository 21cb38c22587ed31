package model

import (
	"fmt"
	"slices"
	"time"
)

// RelayCall is one node-to-node relay call as the harness saw it leave
// the sender's gRPC stack: which method (Mode: "single" for RelayMessage,
// "bulk" for RelayBulkMessage, "stream" for RelayStream), from which node
// to which, and when. Refused marks a relay stream the receiver ended with
// InvalidArgument (a refusal of one item, after which the sender relays the
// stream's items again one by one in bulk).
type RelayCall struct {
	Time     time.Duration
	From, To string
	Mode     string
	Refused  bool
	// Msg is the message the call carries ("room#seq"; "" for a stream,
	// whose items are many).
	Msg       string
	TraceLine int
}

// CheckRelayMode is relay-mode: every relay call uses the best mode both
// ends speak, given the configured mode and the protocol versions the
// harness started each end's incarnation with (ModeFor of the configured
// mode and both versions). After either end's version changed, calls may
// keep the mode of the previous incarnations for h.ModeRefresh (the
// registry's refresh interval): a sender learns a peer's new version when
// it reads the registry again. Past that, a fallback learnt from one
// incarnation must not stick to the next one (too low a mode), and no
// sender may relay in a mode its peer does not speak (too high). One
// refusal excuses bulk calls in stream mode: a relay stream the receiver
// refused (InvalidArgument: an item over a limit; Unimplemented: a peer
// that no longer speaks v3) has its items relayed again in bulk, within
// h.ModeRefresh of the refusal.
func CheckRelayMode(h *History) []Violation {
	if h.ModeRefresh <= 0 || len(h.Relays) == 0 {
		return nil
	}
	var refusals []RelayCall
	var out []Violation
	for _, c := range h.Relays {
		if c.Refused {
			refusals = append(refusals, c)
			continue
		}
		allowed := h.modesBetween(c.From, c.To, c.Time-h.ModeRefresh, c.Time)
		if slices.Contains(allowed, c.Mode) {
			continue
		}
		if c.Mode == "bulk" && refusedBefore(refusals, c, h.ModeRefresh) {
			continue
		}
		// A sender whose read of the peer's registry entry failed (a Redis
		// error on an op of the message, at its node) keeps the peer it
		// knew, with the version it last read, however long ago: any mode
		// the pair spoke up to the call.
		if h.registryReadFailed(c) && slices.Contains(h.modesBetween(c.From, c.To, 0, c.Time), c.Mode) {
			continue
		}
		best := h.bestMode(c.From, c.To, c.Time)
		out = append(out, Violation{
			Property: PropRelayMode, Node: c.From,
			Detail: fmt.Sprintf("at t=%v relayed to %s in %s mode, but the best mode both speak is %s (configured %s, %s v%d, %s v%d; allowed within %v of a version change: %v)",
				c.Time, c.To, c.Mode, best, h.Mode, c.From, h.versionAt(c.From, c.Time), c.To, h.versionAt(c.To, c.Time), h.ModeRefresh, allowed),
			TraceLines: lines(c.TraceLine),
		})
	}
	return out
}

// registryReadFailed reports whether a Redis error hit an operation of
// c's message on c's sender before c: the sender's read of the peer's
// entry may have failed.
func (h *History) registryReadFailed(c RelayCall) bool {
	if c.Msg == "" {
		return false
	}
	for _, f := range h.Faults {
		if f.Op && f.Redis && f.Msg == c.Msg && len(f.Nodes) > 0 && f.Nodes[0] == c.From && f.From <= c.Time {
			return true
		}
	}
	return false
}

// refusedBefore reports whether a relay stream from c's sender to c's
// receiver was refused within d before c.
func refusedBefore(refusals []RelayCall, c RelayCall, d time.Duration) bool {
	for _, r := range refusals {
		if r.From == c.From && r.To == c.To && r.Time <= c.Time && r.Time >= c.Time-d {
			return true
		}
	}
	return false
}

// versionAt is the protocol version node's incarnation at t runs: before
// its first incarnation started, the first's; the latest when the harness
// recorded none.
func (h *History) versionAt(node string, t time.Duration) int {
	v, first := len(modes), true
	for _, x := range h.Versions {
		if x.Node == node && (x.From <= t || first) {
			v = x.Protocol
		}
		if x.Node == node {
			first = false
		}
	}
	return v
}

// bestMode is the best mode from and to both speak at t, given the
// configured mode.
func (h *History) bestMode(from, to string, t time.Duration) string {
	v := min(h.versionAt(from, t), h.versionAt(to, t))
	for i, m := range modes {
		if m == h.Mode {
			v = min(v, i+1)
		}
	}
	if v < 1 || v > len(modes) {
		return h.Mode
	}
	return modes[v-1]
}

// modesBetween is every best mode between from and to at some instant of
// [a, b].
func (h *History) modesBetween(from, to string, a, b time.Duration) []string {
	out := []string{h.bestMode(from, to, a)}
	for _, x := range h.Versions {
		if (x.Node == from || x.Node == to) && x.From > a && x.From <= b {
			if m := h.bestMode(from, to, x.From); !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// The text form of a timed fault (text.go describes the line):
// FormatFault and ParseFault, a fault line's head and its reader, and
// the keys each kind of fault line may carry.

package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
)

// FormatFault writes f as one line: time, a head that reads like the
// trace's ("crash n2 for 2.5s", "cut n1->n2 for 1s", "heal isolated n3",
// "upgrade n1 to v3", "forge u2 relay", "steal u4 r1 m17 of u2"), then
// every other non-zero field as key=value ("overlap lag=5ms").
func FormatFault(f Fault) string {
	head, covered := faultHead(f)
	parts := []string{f.At.String(), head}
	keys := faultKeys(f.Kind)
	for _, name := range faultFieldOrder(f.Kind) {
		fd := keys[name]
		if has(covered, name) || fd.zero(&f) {
			continue
		}
		if fd.flag {
			parts = append(parts, name)
		} else {
			parts = append(parts, name+"="+fd.format(&f, quoteName))
		}
	}
	return strings.Join(parts, " ")
}

// faultHead is f's head and the fields (keys of faultKeys) it says.
func faultHead(f Fault) (string, []string) {
	n, p, u := formatNode(f.Node), formatNode(f.Peer), quoteName(f.User)
	switch k := f.Kind; k {
	case "crash", "pause":
		return fmt.Sprintf("%s %s for %v", k, n, f.For), []string{"node", "for"}
	case "restart":
		return "restart " + n, []string{"node"}
	case "upgrade":
		return fmt.Sprintf("upgrade %s to v%d", n, f.Protocol), []string{"node", "protocol"}
	case "partition":
		switch {
		case f.Peer == -1:
			return fmt.Sprintf("isolate %s for %v", n, f.For), []string{"node", "peer", "for"}
		case f.OneWay:
			return fmt.Sprintf("cut %s->%s for %v", n, p, f.For), []string{"node", "peer", "one-way", "for"}
		}
		return fmt.Sprintf("partition %s<->%s for %v", n, p, f.For), []string{"node", "peer", "for"}
	case "heal":
		switch {
		case f.Peer == -1:
			return "heal isolated " + n, []string{"node", "peer"}
		case f.OneWay:
			return fmt.Sprintf("heal %s->%s", n, p), []string{"node", "peer", "one-way"}
		}
		return fmt.Sprintf("heal %s<->%s", n, p), []string{"node", "peer"}
	case "blip":
		if f.End {
			return fmt.Sprintf("blip %s<->%s over", n, p), []string{"node", "peer", "end"}
		}
		return fmt.Sprintf("blip %s<->%s for %v", n, p, f.For), []string{"node", "peer", "for"}
	case "redis-outage", "redis-spike":
		return fmt.Sprintf("%s for %v", k, f.For), []string{"for"}
	case "route-flush":
		return "route-flush", nil
	case "vanish":
		return "vanish " + u, []string{"user"}
	case "slow":
		return fmt.Sprintf("slow %s for %v", u, f.For), []string{"user", "for"}
	case "forge":
		return fmt.Sprintf("forge %s %s", u, quoteName(f.Forge.Call)), []string{"user", "call"}
	case "steal":
		return fmt.Sprintf("steal %s %s %s of %s", u, quoteName(f.Steal.Room), quoteName(f.Steal.MsgID), quoteName(f.Steal.Victim)),
			[]string{"user", "room", "msg", "victim"}
	}
	return quoteName(string(f.Kind)), nil
}

// FaultHeads are the words a fault line may start with (after its time).
var FaultHeads = []string{"crash", "pause", "restart", "upgrade", "partition", "isolate", "cut", "heal", "blip",
	"redis-outage", "redis-spike", "route-flush", "vanish", "slow", "forge", "steal"}

// ParseFault reads FormatFault's line.
func ParseFault(line string) (Fault, error) {
	toks, err := splitTokens(line)
	if err != nil {
		return Fault{}, err
	}
	if len(toks) < 2 {
		return Fault{}, fmt.Errorf("fault %q: want TIME KIND ..., e.g. 3.4s crash n2 for 2.5s", line)
	}
	var f Fault
	if f.At, err = parseTime(toks[0]); err != nil {
		return Fault{}, err
	}
	h := headReader{toks: toks[1:]}
	word := h.next("kind")
	covered := h.fault(&f, word)
	if h.err != nil {
		return Fault{}, fmt.Errorf("%s: %w", word, h.err)
	}
	keys := faultKeys(f.Kind)
	err = parseKeys(h.toks, covered, func(k, v string) error {
		fd, ok := keys[k]
		if !ok {
			return fmt.Errorf("unknown key %q (keys: %s)", k, strings.Join(faultFieldOrder(f.Kind), ", "))
		}
		return fd.parse(&f, v)
	})
	if err != nil {
		return Fault{}, fmt.Errorf("%s: %w", word, err)
	}
	return f, nil
}

// headReader reads a fault line's head, token by token; the first error
// sticks.
type headReader struct {
	toks []string
	err  error
}

func (h *headReader) next(what string) string {
	if h.err != nil {
		return ""
	}
	if len(h.toks) == 0 || isKeyValue(h.toks[0]) {
		h.err = fmt.Errorf("missing %s", what)
		return ""
	}
	t := h.toks[0]
	h.toks = h.toks[1:]
	return t
}

func (h *headReader) word(w string) {
	if t := h.next(fmt.Sprintf("%q", w)); h.err == nil && t != w {
		h.err = fmt.Errorf("token %q: want %q", t, w)
	}
}

func (h *headReader) node(what string) int {
	t := h.next(what)
	if h.err != nil {
		return 0
	}
	n, err := parseNode(t, false)
	if err != nil {
		h.err = fmt.Errorf("%s %q: %w", what, t, err)
	}
	return n
}

// pair reads "nA<->nB" (sep "<->") or "nA->nB" (sep "->").
func (h *headReader) pair(sep string) (int, int) {
	t := h.next("nodes nA" + sep + "nB")
	if h.err != nil {
		return 0, 0
	}
	a, b, ok := strings.Cut(t, sep)
	if !ok {
		h.err = fmt.Errorf("token %q: want nA%snB", t, sep)
		return 0, 0
	}
	x, err := parseNode(a, false)
	y, err2 := parseNode(b, false)
	if err != nil || err2 != nil {
		h.err = fmt.Errorf("token %q: want nA%snB, nodes from n1", t, sep)
	}
	return x, y
}

func (h *headReader) dur() time.Duration {
	h.word("for")
	t := h.next("duration")
	if h.err != nil {
		return 0
	}
	d, err := parseDuration(t)
	if err != nil {
		h.err = err
	}
	return d
}

func (h *headReader) name(what string) string {
	t := h.next(what)
	if h.err != nil {
		return ""
	}
	s, err := parseName(t)
	if err != nil {
		h.err = fmt.Errorf("%s %q: %w", what, t, err)
	}
	return s
}

// fault reads the head after its first word into f and returns the
// fields it said.
func (h *headReader) fault(f *Fault, word string) []string {
	switch word {
	case "crash", "pause":
		f.Kind = model.FaultKind(word)
		f.Node = h.node("node")
		f.For = h.dur()
	case "restart":
		f.Kind, f.Node = "restart", h.node("node")
	case "upgrade":
		f.Kind, f.Node = "upgrade", h.node("node")
		h.word("to")
		if t := h.next("version vN"); h.err == nil {
			if !strings.HasPrefix(t, "v") {
				h.err = fmt.Errorf("version %q: want vN", t)
			} else if f.Protocol, h.err = parseCount(t[1:]); h.err != nil {
				h.err = fmt.Errorf("version %q: want vN", t)
			}
		}
	case "isolate":
		f.Kind, f.Node, f.Peer = "partition", h.node("node"), -1
		f.For = h.dur()
	case "cut":
		f.Kind, f.OneWay = "partition", true
		f.Node, f.Peer = h.pair("->")
		f.For = h.dur()
	case "partition":
		f.Kind = "partition"
		f.Node, f.Peer = h.pair("<->")
		f.For = h.dur()
	case "heal":
		f.Kind = "heal"
		h.healHead(f)
	case "blip":
		f.Kind = "blip"
		f.Node, f.Peer = h.pair("<->")
		if len(h.toks) > 0 && h.toks[0] == "over" {
			h.toks, f.End = h.toks[1:], true
		} else {
			f.For = h.dur()
		}
	case "redis-outage", "redis-spike":
		f.Kind = model.FaultKind(word)
		f.For = h.dur()
	case "route-flush":
		f.Kind = "route-flush"
	case "vanish":
		f.Kind, f.User = "vanish", h.name("user")
	case "slow":
		f.Kind, f.User = "slow", h.name("user")
		f.For = h.dur()
	case "forge":
		f.Kind, f.User = "forge", h.name("user")
		f.Forge.Call = h.name("forged call")
	case "steal":
		f.Kind, f.User = "steal", h.name("user")
		f.Steal.Room, f.Steal.MsgID = h.name("room"), h.name("message id")
		h.word("of")
		f.Steal.Victim = h.name("victim")
	default:
		if h.err == nil {
			h.err = fmt.Errorf("unknown fault kind %q (kinds: %s)", word, strings.Join(FaultHeads, ", "))
		}
	}
	_, covered := faultHead(*f)
	return covered
}

// healHead reads "isolated nA", "nA->nB" or "nA<->nB".
func (h *headReader) healHead(f *Fault) {
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

// faultFieldOrder is the order keys are written in: the fault's own
// fields, then its forgery's and its steal's (bare for a forge or a steal
// fault, led by "forge." or "steal." otherwise).
func faultFieldOrder(kind model.FaultKind) []string {
	out := []string{"node", "peer", "one-way", "for", "user", "protocol", "overlap", "lag", "end"}
	fp, sp := "forge.", "steal."
	switch kind {
	case "forge":
		fp = ""
	case "steal":
		sp = ""
	}
	for _, k := range []string{"call", "room", "msg", "as", "token", "to"} {
		out = append(out, fp+k)
	}
	for _, k := range []string{"room", "msg", "victim", "member", "to"} {
		out = append(out, sp+k)
	}
	return out
}

// faultKeys are the keys of a fault line of kind (faultFieldOrder).
func faultKeys(kind model.FaultKind) map[string]field[Fault] {
	fp, sp := "forge.", "steal."
	switch kind {
	case "forge":
		fp = ""
	case "steal":
		sp = ""
	}
	return map[string]field[Fault]{
		"node":     nodeField(func(f *Fault) *int { return &f.Node }, false),
		"peer":     nodeField(func(f *Fault) *int { return &f.Peer }, true),
		"one-way":  flagField(func(f *Fault) *bool { return &f.OneWay }),
		"for":      durField(func(f *Fault) *time.Duration { return &f.For }),
		"user":     strField(func(f *Fault) *string { return &f.User }),
		"protocol": intField(func(f *Fault) *int { return &f.Protocol }, "v"),
		"overlap":  flagField(func(f *Fault) *bool { return &f.Overlap }),
		"lag":      durField(func(f *Fault) *time.Duration { return &f.Lag }),
		"end":      flagField(func(f *Fault) *bool { return &f.End }),

		fp + "call":  strField(func(f *Fault) *string { return &f.Forge.Call }),
		fp + "room":  strField(func(f *Fault) *string { return &f.Forge.Room }),
		fp + "msg":   strField(func(f *Fault) *string { return &f.Forge.MsgID }),
		fp + "as":    strField(func(f *Fault) *string { return &f.Forge.As }),
		fp + "token": strField(func(f *Fault) *string { return &f.Forge.Token }),
		fp + "to":    nodeField(func(f *Fault) *int { return &f.Forge.Node }, false),

		sp + "room":   strField(func(f *Fault) *string { return &f.Steal.Room }),
		sp + "msg":    strField(func(f *Fault) *string { return &f.Steal.MsgID }),
		sp + "victim": strField(func(f *Fault) *string { return &f.Steal.Victim }),
		sp + "member": flagField(func(f *Fault) *bool { return &f.Steal.Member }),
		sp + "to":     nodeField(func(f *Fault) *int { return &f.Steal.Node }, false),
	}
}

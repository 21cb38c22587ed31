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

// faultHead is f's head and the fields (keys of faultKeys) it says: its
// kind's (Kind.Head).
func faultHead(f Fault) (string, []string) {
	if k, ok := Lookup(f.Kind); ok {
		return k.Head(f)
	}
	return quoteName(string(f.Kind)), nil
}

// FaultHeads are the words a fault line may start with (after its
// time): the registered kinds' heads.
func FaultHeads() []string {
	var out []string
	for _, k := range Registry {
		out = append(out, k.Heads()...)
	}
	return out
}

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

// fault reads the head after its first word into f (its kind's
// ReadHead) and returns the fields it said.
func (h *headReader) fault(f *Fault, word string) []string {
	k, ok := byHead(word)
	if !ok {
		if h.err == nil {
			h.err = fmt.Errorf("unknown fault kind %q (kinds: %s)", word, strings.Join(FaultHeads(), ", "))
		}
		return nil
	}
	k.ReadHead(h, word, f)
	_, covered := faultHead(*f)
	return covered
}

// faultFieldOrder is the order keys are written in: the fault's own
// fields, then its forgery's and its steal's (bare for a forge or a steal
// fault, led by "forge." or "steal." otherwise).
func faultFieldOrder(kind model.FaultKind) []string {
	out := []string{"node", "peer", "one-way", "for", "user", "protocol", "overlap", "lag", "end"}
	fp, sp := "forge.", "steal."
	switch kind {
	case model.FaultForge:
		fp = ""
	case model.FaultSteal:
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
	case model.FaultForge:
		fp = ""
	case model.FaultSteal:
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

package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/relaysim/relaysim/model"
)

// This file is the text form of a run's plan: its actions, its timed
// faults and its fault mix, one line each, that parse back to the same
// value (pebble's metamorphic ops), so that a run made explicit (a shrunk
// one, a story) can be written down, read and replayed. The String
// methods stay as they are: they are the trace's text, which is hashed.
//
// A line is a head that reads like the trace ("1.25s u3 send r1 m17",
// "3.4s crash n2 for 2.5s", "4s cut n1->n2 for 1s") followed by key=value
// tokens for every field the head does not say and that is not zero
// ("node=n2", "size=40", "overlap lag=5ms"). Names are bare when they are
// plain (letters, digits, _ . : / @ + -) and Go-quoted otherwise; the
// malformed-name calls always quote theirs.

// FormatAction writes a as one line: time, user, kind, the kind's
// positional fields, then the other non-zero fields as key=value.
func FormatAction(a Action) string {
	q := quoteName
	if a.Kind.bad() {
		q = strconv.Quote
	}
	parts := []string{a.At.String(), quoteName(a.User), quoteName(string(a.Kind))}
	pos := actionPositions[a.Kind]
	for _, f := range pos {
		parts = append(parts, actionFields[f].format(&a, q))
	}
	for _, name := range actionFieldOrder {
		if !has(pos, name) && !actionFields[name].zero(&a) {
			parts = append(parts, name+"="+actionFields[name].format(&a, q))
		}
	}
	return strings.Join(parts, " ")
}

// ParseAction reads FormatAction's line.
func ParseAction(line string) (Action, error) {
	toks, err := splitTokens(line)
	if err != nil {
		return Action{}, err
	}
	if len(toks) < 3 {
		return Action{}, fmt.Errorf("action %q: want TIME USER KIND ..., e.g. 1.25s u3 send r1 m17", line)
	}
	var a Action
	if a.At, err = parseTime(toks[0]); err != nil {
		return Action{}, err
	}
	if a.User, err = parseName(toks[1]); err != nil {
		return Action{}, err
	}
	kind, err := parseName(toks[2])
	if err != nil {
		return Action{}, err
	}
	a.Kind = ActionKind(kind)
	pos, ok := actionPositions[a.Kind]
	if !ok {
		return Action{}, fmt.Errorf("unknown action kind %q (kinds: %s)", kind, strings.Join(actionKindNames(), ", "))
	}
	rest := toks[3:]
	if len(rest) < len(pos) {
		return Action{}, fmt.Errorf("%s: want %d fields after the kind (%s), got %d", a.Kind, len(pos), strings.Join(pos, " "), len(rest))
	}
	for i, name := range pos {
		if isKeyValue(rest[i]) {
			return Action{}, fmt.Errorf("%s: token %q: want its %s here, not a key=value", a.Kind, rest[i], name)
		}
		if err := actionFields[name].parse(&a, rest[i]); err != nil {
			return Action{}, fmt.Errorf("%s: %s %q: %w", a.Kind, name, rest[i], err)
		}
	}
	err = parseKeys(rest[len(pos):], pos, func(k, v string) error {
		f, ok := actionFields[k]
		if !ok || f.flag {
			return fmt.Errorf("unknown key %q (keys: %s)", k, strings.Join(actionFieldOrder, ", "))
		}
		return f.parse(&a, v)
	})
	if err != nil {
		return Action{}, fmt.Errorf("%s: %w", a.Kind, err)
	}
	return a, nil
}

// actionPositions are each kind's positional fields after the kind.
var actionPositions = map[ActionKind][]string{
	ActCreate: {"room"}, ActJoin: {"room"}, ActLeave: {"room"},
	ActConnect: {"node"}, ActDisconnect: nil, ActVanish: nil,
	ActSend: {"room", "msg"}, ActSteal: {"room", "msg"}, ActSlow: {"for"},
	ActForgeSend: nil, ActForgeJoin: nil, ActForgeLeave: nil, ActForgeCreate: nil,
	ActForgeConnect: nil, ActForgeRelay: nil, ActForgeRelayBulk: nil, ActForgeRelayStream: nil,
	ActBadCreate: {"room"}, ActBadJoin: {"room"}, ActBadJoinAs: {"room"},
	ActBadSend: {"room", "msg"}, ActBadSendID: {"room", "msg"}, ActBadConnect: {"node"},
}

func actionKindNames() []string {
	all := []ActionKind{ActCreate, ActJoin, ActLeave, ActConnect, ActDisconnect, ActVanish, ActSend, ActSlow,
		ActForgeSend, ActForgeJoin, ActForgeLeave, ActForgeCreate, ActForgeConnect, ActForgeRelay, ActForgeRelayBulk, ActForgeRelayStream,
		ActSteal, ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID, ActBadConnect}
	out := make([]string, len(all))
	for i, k := range all {
		out[i] = string(k)
	}
	return out
}

// field is one field of a line's value: how it is written, read and
// whether it is zero (then a line leaves it out). A flag is written as
// its bare key when true.
type field[T any] struct {
	format func(v *T, q func(string) string) string
	parse  func(v *T, s string) error
	zero   func(v *T) bool
	flag   bool
}

func strField[T any](get func(*T) *string) field[T] {
	return field[T]{
		format: func(v *T, q func(string) string) string { return q(*get(v)) },
		parse: func(v *T, s string) (err error) {
			*get(v), err = parseName(s)
			return err
		},
		zero: func(v *T) bool { return *get(v) == "" },
	}
}

func nodeField[T any](get func(*T) *int, none bool) field[T] {
	return field[T]{
		format: func(v *T, _ func(string) string) string { return formatNode(*get(v)) },
		parse: func(v *T, s string) (err error) {
			*get(v), err = parseNode(s, none)
			return err
		},
		zero: func(v *T) bool { return *get(v) == 0 },
	}
}

func durField[T any](get func(*T) *time.Duration) field[T] {
	return field[T]{
		format: func(v *T, _ func(string) string) string { return get(v).String() },
		parse: func(v *T, s string) (err error) {
			*get(v), err = parseDuration(s)
			return err
		},
		zero: func(v *T) bool { return *get(v) == 0 },
	}
}

func intField[T any](get func(*T) *int, prefix string) field[T] {
	return field[T]{
		format: func(v *T, _ func(string) string) string { return prefix + strconv.Itoa(*get(v)) },
		parse: func(v *T, s string) error {
			n, err := parseCount(strings.TrimPrefix(s, prefix))
			if err != nil || !strings.HasPrefix(s, prefix) {
				return fmt.Errorf("%q: want %sN, N a whole number >= 0", s, prefix)
			}
			*get(v) = n
			return nil
		},
		zero: func(v *T) bool { return *get(v) == 0 },
	}
}

func flagField[T any](get func(*T) *bool) field[T] {
	return field[T]{
		format: func(*T, func(string) string) string { return "" },
		parse: func(v *T, s string) error {
			if s != "" {
				return fmt.Errorf("a flag takes no value")
			}
			*get(v) = true
			return nil
		},
		zero: func(v *T) bool { return !*get(v) },
		flag: true,
	}
}

var actionFieldOrder = []string{"room", "msg", "node", "for", "size", "as", "token"}

var actionFields = map[string]field[Action]{
	"room":  strField(func(a *Action) *string { return &a.Room }),
	"msg":   strField(func(a *Action) *string { return &a.MsgID }),
	"node":  nodeField(func(a *Action) *int { return &a.Node }, false),
	"for":   durField(func(a *Action) *time.Duration { return &a.For }),
	"size":  intField(func(a *Action) *int { return &a.Size }, ""),
	"as":    strField(func(a *Action) *string { return &a.As }),
	"token": strField(func(a *Action) *string { return &a.Token }),
}

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

// faultKinds are the kinds a fault line may name.
var faultKinds = []string{"crash", "pause", "restart", "upgrade", "partition", "isolate", "cut", "heal", "blip",
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
			h.err = fmt.Errorf("unknown fault kind %q (kinds: %s)", word, strings.Join(faultKinds, ", "))
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

// mixFields are the mix's keys, in FaultMix.String's order: a
// probability (0..1) or a count.
var mixFields = []struct {
	name string
	p    func(*FaultMix) *float64
	n    func(*FaultMix) *int
}{
	{name: drawDropRequest, p: func(m *FaultMix) *float64 { return &m.DropRequest }},
	{name: drawDropResponse, p: func(m *FaultMix) *float64 { return &m.DropResponse }},
	{name: drawDuplicate, p: func(m *FaultMix) *float64 { return &m.Duplicate }},
	{name: drawDelay, p: func(m *FaultMix) *float64 { return &m.Delay }},
	{name: "redis-err", p: func(m *FaultMix) *float64 { return &m.RedisError }},
	{name: "crash", n: func(m *FaultMix) *int { return &m.Crashes }},
	{name: "partition", n: func(m *FaultMix) *int { return &m.Partitions }},
	{name: "pause", n: func(m *FaultMix) *int { return &m.Pauses }},
	{name: "redis-outage", n: func(m *FaultMix) *int { return &m.RedisOutages }},
	{name: "route-flush", n: func(m *FaultMix) *int { return &m.RouteFlushes }},
	{name: "vanish", n: func(m *FaultMix) *int { return &m.Vanishes }},
	{name: "slow-consumer", n: func(m *FaultMix) *int { return &m.SlowConsumers }},
	{name: "redis-spike", n: func(m *FaultMix) *int { return &m.RedisSpikes }},
	{name: "forge", n: func(m *FaultMix) *int { return &m.Forgeries }},
	{name: "steal", n: func(m *FaultMix) *int { return &m.Steals }},
	{name: drawRecvBreak, p: func(m *FaultMix) *float64 { return &m.RecvBreak }},
	{name: "blip", n: func(m *FaultMix) *int { return &m.Blips }},
}

// FormatMix writes m as key=value tokens for its non-zero knobs ("none"
// when every one is zero), probabilities in the shortest form that reads
// back to the same float.
func FormatMix(m FaultMix) string {
	var parts []string
	for _, f := range mixFields {
		switch {
		case f.p != nil && *f.p(&m) != 0:
			parts = append(parts, f.name+"="+strconv.FormatFloat(*f.p(&m), 'g', -1, 64))
		case f.n != nil && *f.n(&m) != 0:
			parts = append(parts, f.name+"="+strconv.Itoa(*f.n(&m)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// ParseMix reads FormatMix's text.
func ParseMix(s string) (FaultMix, error) {
	var m FaultMix
	toks := strings.Fields(s)
	if len(toks) == 1 && toks[0] == "none" {
		return m, nil
	}
	if len(toks) == 0 {
		return m, fmt.Errorf("empty mix (write none for no fault)")
	}
	seen := map[string]bool{}
	for _, t := range toks {
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return m, fmt.Errorf("mix: token %q: want key=value", t)
		}
		if seen[k] {
			return m, fmt.Errorf("mix: key %q given twice", k)
		}
		seen[k] = true
		if err := setMix(&m, k, v); err != nil {
			return m, fmt.Errorf("mix: %s=%s: %w", k, v, err)
		}
	}
	return m, nil
}

func setMix(m *FaultMix, k, v string) error {
	for _, f := range mixFields {
		if f.name != k {
			continue
		}
		if f.n != nil {
			n, err := parseCount(v)
			*f.n(m) = n
			return err
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return fmt.Errorf("want a probability in 0..1")
		}
		*f.p(m) = p
		return nil
	}
	names := make([]string, len(mixFields))
	for i, f := range mixFields {
		names[i] = f.name
	}
	return fmt.Errorf("unknown knob (knobs: %s)", strings.Join(names, ", "))
}

// splitTokens splits a line at spaces; a token that starts with a quote,
// or whose value (after key=) does, runs to the quote's end.
func splitTokens(line string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		start := i
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			if line[i] == '"' && (i == start || line[i-1] == '=') {
				q, err := strconv.QuotedPrefix(line[i:])
				if err != nil {
					return nil, fmt.Errorf("token %q: unterminated or bad quoted string", line[start:])
				}
				i += len(q)
				if i < len(line) && line[i] != ' ' && line[i] != '\t' {
					return nil, fmt.Errorf("token %q: text after a quoted string", tokenAt(line, start))
				}
				break
			}
			i++
		}
		out = append(out, line[start:i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty line")
	}
	return out, nil
}

func tokenAt(line string, i int) string {
	if j := strings.IndexAny(line[i:], " \t"); j >= 0 {
		return line[i : i+j]
	}
	return line[i:]
}

// isKeyValue reports whether a token is key=value (a bare key's '=' is
// before any quote).
func isKeyValue(t string) bool {
	i := strings.IndexByte(t, '=')
	return i > 0 && !strings.ContainsRune(t[:i], '"')
}

// parseKeys reads key=value tokens (or a bare key: a flag) through set,
// refusing a key given twice or already said by the head.
func parseKeys(toks, said []string, set func(k, v string) error) error {
	seen := map[string]bool{}
	for _, t := range toks {
		k, v, _ := strings.Cut(t, "=")
		if strings.HasPrefix(k, `"`) || k == "" {
			return fmt.Errorf("token %q: want key=value", t)
		}
		if seen[k] || has(said, k) {
			return fmt.Errorf("key %q given twice", k)
		}
		seen[k] = true
		if err := set(k, v); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// plainName reports whether s can be written bare: letters, digits and
// _ . : / @ + -, not starting with a quote, valid UTF-8, non-empty.
func plainName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.:/@+-", r) {
			return false
		}
	}
	return true
}

func quoteName(s string) string {
	if plainName(s) {
		return s
	}
	return strconv.Quote(s)
}

func parseName(t string) (string, error) {
	if strings.HasPrefix(t, `"`) {
		s, err := strconv.Unquote(t)
		if err != nil {
			return "", fmt.Errorf("%s is not a Go-quoted string", t)
		}
		return s, nil
	}
	if t == "" || !plainName(t) {
		return "", fmt.Errorf("%q: quote a name that is not plain (letters, digits, _ . : / @ + -)", t)
	}
	return t, nil
}

// formatNode writes a node index as n1, n2, ... (-1: none).
func formatNode(i int) string {
	if i == -1 {
		return "none"
	}
	return "n" + strconv.Itoa(i+1)
}

func parseNode(t string, none bool) (int, error) {
	if none && t == "none" {
		return -1, nil
	}
	if strings.HasPrefix(t, "n") {
		if n, err := strconv.Atoi(t[1:]); err == nil && n >= 1 && n <= 1<<20 && t[1] != '+' && t[1] != '0' {
			return n - 1, nil
		}
	}
	if none {
		return 0, fmt.Errorf("want a node n1, n2, ... or none")
	}
	return 0, fmt.Errorf("want a node n1, n2, ...")
}

func parseTime(t string) (time.Duration, error) {
	d, err := parseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("time %q: want a virtual time such as 1.25s", t)
	}
	return d, nil
}

// parseDuration reads a duration >= 0 in Duration.String's form.
func parseDuration(t string) (time.Duration, error) {
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration >= 0 such as 1.5s or 250ms", t)
	}
	return d, nil
}

func parseCount(t string) (int, error) {
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || strconv.Itoa(n) != t {
		return 0, fmt.Errorf("%q: want a whole number >= 0", t)
	}
	return n, nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

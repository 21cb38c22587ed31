package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// text*.go are the text form of a run's plan: its actions, its timed
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
//
// This file holds the action and mix lines; textfault.go the fault
// lines, textlex.go the vocabulary they share (field codecs, tokens,
// names, nodes, durations).

// FormatAction writes a as one line: time, user, kind, the kind's
// positional fields, then the other non-zero fields as key=value.
func FormatAction(a Action) string {
	q := quoteName
	if a.Kind.Bad() {
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
	ActSend: {"room", "msg"}, ActSteal: {"room", "msg"}, ActSlow: {"for"}, ActStall: {"for"},
	ActForgeSend: nil, ActForgeJoin: nil, ActForgeLeave: nil, ActForgeCreate: nil,
	ActForgeConnect: nil, ActForgeRelay: nil, ActForgeRelayBulk: nil, ActForgeRelayStream: nil,
	ActBadCreate: {"room"}, ActBadJoin: {"room"}, ActBadJoinAs: {"room"},
	ActBadSend: {"room", "msg"}, ActBadSendID: {"room", "msg"}, ActBadConnect: {"node"},
}

// ActionKinds are every action kind, in the order an error lists them.
func ActionKinds() []ActionKind {
	return []ActionKind{ActCreate, ActJoin, ActLeave, ActConnect, ActDisconnect, ActVanish, ActSend, ActSlow, ActStall,
		ActForgeSend, ActForgeJoin, ActForgeLeave, ActForgeCreate, ActForgeConnect, ActForgeRelay, ActForgeRelayBulk, ActForgeRelayStream,
		ActSteal, ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID, ActBadConnect}
}

func actionKindNames() []string {
	all := ActionKinds()
	out := make([]string, len(all))
	for i, k := range all {
		out[i] = string(k)
	}
	return out
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

// mixField is one knob of the mix: a probability (0..1) or a count, and
// the bound the draw keeps it within.
type mixField struct {
	name string
	p    func(*FaultMix) *float64
	n    func(*FaultMix) *int
	max  func(*FaultBounds) *float64 // a probability's bound
	maxN func(*FaultBounds) *int     // a count's bound
	rank int
}

// opKnobs are the mix's per-operation knobs (probabilities, drawn where
// the operation is gated); the counts are the registered kinds' budgets.
var opKnobs = []mixField{
	{name: DrawDropRequest, p: func(m *FaultMix) *float64 { return &m.DropRequest }, max: network, rank: 0},
	{name: DrawDropResponse, p: func(m *FaultMix) *float64 { return &m.DropResponse }, max: network, rank: 1},
	{name: DrawDuplicate, p: func(m *FaultMix) *float64 { return &m.Duplicate }, max: network, rank: 2},
	{name: DrawDelay, p: func(m *FaultMix) *float64 { return &m.Delay }, max: network, rank: 3},
	{name: "redis-err", p: func(m *FaultMix) *float64 { return &m.RedisError },
		max: func(b *FaultBounds) *float64 { return &b.RedisErrors }, rank: 4},
	{name: DrawRecvBreak, p: func(m *FaultMix) *float64 { return &m.RecvBreak },
		max: func(b *FaultBounds) *float64 { return &b.RecvBreaks }, rank: 15},
}

func network(b *FaultBounds) *float64 { return &b.Network }

// OpRates are the mix's per-operation rates, in the mix's order.
func OpRates() []func(*FaultMix) *float64 {
	out := make([]func(*FaultMix) *float64, len(opKnobs))
	for i, f := range opKnobs {
		out[i] = f.p
	}
	return out
}

// Rates is m with its per-operation rates only (every count zero).
func (m FaultMix) Rates() FaultMix {
	var r FaultMix
	for _, p := range OpRates() {
		*p(&r) = *p(&m)
	}
	return r
}

// mixFields are the mix's keys in their order (MixRank): the
// per-operation knobs and the registered kinds' counts.
func mixFields() []mixField {
	out := append([]mixField(nil), opKnobs...)
	for _, k := range Counted() {
		b := BudgetOf(k)
		out = append(out, mixField{name: b.Knob, n: b.Mix, maxN: b.Bound, rank: b.MixRank})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rank < out[j].rank })
	return out
}

// FormatMix writes m as key=value tokens for its non-zero knobs ("none"
// when every one is zero), probabilities in the shortest form that reads
// back to the same float.
func FormatMix(m FaultMix) string {
	var parts []string
	for _, f := range mixFields() {
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

// MixKnobs are the mix's keys, in FormatMix's order.
func MixKnobs() []string {
	fs := mixFields()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
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
	for _, f := range mixFields() {
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
	return fmt.Errorf("unknown knob (knobs: %s)", strings.Join(MixKnobs(), ", "))
}

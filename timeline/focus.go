package timeline

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/relaysim/relaysim/model"
)

// window is a span of virtual milliseconds the page can show; OK says the
// violation it is for has evidence on the drawing.
type window struct {
	A, B float64
	OK   bool
}

// Attr renders w for a data attribute: "A B".
func (w window) Attr() string { return fmt.Sprintf("%.1f %.1f", w.A, w.B) }

// minPad is the least time shown either side of a violation's evidence, in
// milliseconds: enough for the calls around it to read.
const minPad = 1000.0

// windows is, per violation, the span around its evidence marks (the marks
// of the trace lines it cites, and its owed mark), padded by a quarter of
// its length and at least minPad, within the run.
func (v *view) windows(vs []model.Violation) []window {
	byLine := map[int]window{}
	grow := func(w window, a, b float64) window {
		if !w.OK {
			return window{a, b, true}
		}
		return window{min(w.A, a), max(w.B, b), true}
	}
	owed := map[int]window{}
	for _, m := range v.Marks {
		a, b := m.X, max(m.X, m.X2)
		if m.Shape == "owed" {
			owed[m.Viol] = grow(owed[m.Viol], a, b)
		} else if m.Line > 0 && m.Evidence > 0 {
			byLine[m.Line] = grow(byLine[m.Line], a, b)
		}
	}
	out := make([]window, len(vs))
	for i, viol := range vs {
		w := owed[i]
		for _, l := range viol.TraceLines {
			if lw, ok := byLine[l]; ok {
				w = grow(w, lw.A, lw.B)
			}
		}
		if w.OK {
			pad := max((w.B-w.A)/4, minPad)
			w = window{max(w.A-pad, 0), min(w.B+pad, v.End), true}
		}
		out[i] = w
	}
	return out
}

// busy is the window a page without a violation opens on: from the first
// mark to the last, a twentieth of that (at least 100 ms) either side, so
// that a story whose actions start late does not open on its quiet start.
func (v *view) busy() window {
	if len(v.Marks) == 0 {
		return window{0, v.End, true}
	}
	a, b := v.End, 0.0
	for _, m := range v.Marks {
		a, b = min(a, m.X), max(b, m.X, m.X2)
	}
	pad := max((b-a)/20, 100)
	return window{max(a-pad, 0), min(b+pad, v.End), true}
}

// group is the violations of one property.
type group struct {
	Property string
	Items    []item
}

// item is one violation in the list: a short line to click, the whole
// violation on hover.
type item struct {
	N      int // from 1, in the checkers' order
	Short  string
	Full   string
	Window window
	Lines  string // its evidence's trace lines, "8 10"
}

// groups sorts vs by property, in order of each property's first violation.
func groups(vs []model.Violation, wins []window) []group {
	var out []group
	at := map[string]int{}
	for i, viol := range vs {
		g, ok := at[viol.Property]
		if !ok {
			g = len(out)
			at[viol.Property] = g
			out = append(out, group{Property: viol.Property})
		}
		lines := make([]string, len(viol.TraceLines))
		for j, l := range viol.TraceLines {
			lines[j] = strconv.Itoa(l)
		}
		out[g].Items = append(out[g].Items, item{N: i + 1, Short: shortViolation(viol), Full: full(viol.String()),
			Window: wins[i], Lines: strings.Join(lines, " ")})
	}
	return out
}

// shortViolation names what a violation is about with every name shortened,
// then its detail: "u2 r1#1: acked send never delivered".
func shortViolation(v model.Violation) string {
	var parts []string
	if v.User != "" {
		parts = append(parts, short(v.User))
	}
	if v.Node != "" {
		parts = append(parts, v.Node)
	}
	switch {
	case v.Room != "" && v.Seq != 0:
		parts = append(parts, fmt.Sprintf("%s#%d", short(v.Room), v.Seq))
	case v.Room != "":
		parts = append(parts, short(v.Room))
	case v.Seq != 0:
		parts = append(parts, fmt.Sprintf("seq %d", v.Seq))
	}
	head := strings.Join(parts, " ")
	if head == "" {
		return full(v.Detail)
	}
	return head + ": " + full(v.Detail)
}

// labelRunes is how much of a name a label shows.
const labelRunes = 12

// short is name as a label shows it: its first labelRunes runes and "…"
// when longer, bytes that are not UTF-8 each as U+FFFD.
func short(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if utf8.RuneCountInString(name) <= labelRunes {
		return name
	}
	i, n := 0, 0
	for i = range name {
		if n == labelRunes {
			break
		}
		n++
	}
	return name[:i] + "…"
}

// full is name as hovering shows it: itself, or Go-quoted when it is not
// UTF-8, so that every byte of it shows.
func full(name string) string {
	if utf8.ValidString(name) {
		return name
	}
	return strconv.Quote(name)
}

// overviewBins is how many columns the overview strip counts activity in.
const overviewBins = 400

// overview is the whole run, small: activity per column, the faults, and
// the violations' evidence, in a 1000-wide box the page stretches.
type overview struct {
	Bars     []ovRect
	Faults   []ovRect
	Evidence []ovRect
}

// ovRect is one rectangle of the overview, in its box's units.
type ovRect struct {
	X, W, Y, H float64
	First      bool // evidence of the first violation
}

// Overview box geometry: activity bars, then the faults' row, then the
// evidence's row.
const (
	ovW     = 1000.0
	ovBarsH = 26.0
	ovH     = 40.0
)

// overviewOf draws the strip: per column, the activity (calls and
// deliveries) as a bar of log height; the faults in a row under it; the
// evidence in a row at the bottom, one tick per column that has any, the
// first violation's over the whole height.
func (v *view) overviewOf() overview {
	var o overview
	var bins [overviewBins]int
	var evidence [overviewBins]int // 0 none, 1 first violation's, 2 others'
	peak := 0
	col := func(x float64) int { return min(max(int(x/max(v.End, 1)*overviewBins), 0), overviewBins-1) }
	k := ovW / max(v.End, 1)
	for _, m := range v.Marks {
		if m.Evidence > 0 {
			c := col(m.X)
			if evidence[c] == 0 || m.Evidence == 1 {
				evidence[c] = m.Evidence
			}
		}
		switch m.Shape {
		case "span":
			o.Faults = append(o.Faults, ovRect{X: m.X * k, W: max((m.X2-m.X)*k, 1), Y: ovBarsH + 1, H: 4})
		case "bar", "dot":
			c := col(m.X)
			bins[c]++
			peak = max(peak, bins[c])
		}
	}
	w := ovW / overviewBins
	for i, n := range bins {
		if n > 0 {
			h := math.Round(ovBarsH*math.Log1p(float64(n))/math.Log1p(float64(peak))*10) / 10
			o.Bars = append(o.Bars, ovRect{X: float64(i) * w, W: w, Y: ovBarsH - h, H: h})
		}
	}
	for i, e := range evidence {
		switch e {
		case 1:
			o.Evidence = append(o.Evidence, ovRect{X: float64(i) * w, W: w, Y: 0, H: ovH, First: true})
		case 2:
			o.Evidence = append(o.Evidence, ovRect{X: float64(i) * w, W: w, Y: ovBarsH + 6, H: ovH - ovBarsH - 6})
		}
	}
	return o
}

// Package timeline draws a run's history as one self-contained HTML page: a
// lane per client, per node and for Redis on virtual time; client calls as
// bars, deliveries as dots (filled: pushed live; hollow: from the room log),
// relays as arrows between node lanes, faults as shaded spans on the lanes
// they touch, and a violation's evidence marked in red. The page opens on the
// first violation's window, under a strip showing the whole run; its script
// zooms and pans. Violations are listed by property, each focusing its own
// window on a click. Hovering a mark shows its trace line.
//
// It reads only model types (what the clients saw, the faults the harness
// recorded, the violations the checkers found, the run's counts) and the
// run's trace text; it never runs anything. The page loads nothing from the
// network: its style, its script and its data are inline. The same input
// draws the same bytes.
package timeline

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
)

// Input is what a page is drawn from.
type Input struct {
	// Title heads the page, e.g. "relaysim run seed=0x2a mode=bulk".
	Title string
	// Command reproduces the run (the banner's replay line), if known.
	Command string
	// History is the run's history; Violations what the checkers found.
	History    *model.History
	Violations []model.Violation
	// Trace is the run's trace, one line per element: a mark's TraceLine n
	// shows Trace[n-1] on hover. Nil: marks show their event alone.
	Trace []string
	// Counts are the run's headline numbers as its printed summary shows
	// them (sim.Result.Counts). Nil: counted from History alone, each
	// lane's user and each recorded fault counted once.
	Counts *model.Counts
}

// Layout constants, in pixels.
const (
	laneH   = 26
	laneGap = 4
	labelW  = 110
	topPad  = 24
)

// Write renders in as HTML to w.
func Write(w io.Writer, in Input) error {
	p, err := build(in)
	if err != nil {
		return err
	}
	return page.Execute(w, p)
}

// lane is one horizontal band of the drawing.
type lane struct {
	Name  string // in full, for hovering
	Label string // shortened, drawn
	Kind  string // "redis", "node" or "client"
	Y     int
}

// mark is one drawn thing. Exactly one of its shapes applies: Bar (X..X2 on
// a lane), Dot (at X on a lane), Arrow (X,Y to X2,Y2) or Span (a shaded
// rectangle). X and X2 are virtual milliseconds: the page's script places
// them on the screen for the window it shows.
type mark struct {
	Shape string // "bar", "dot", "arrow", "span", "tick", "owed"
	Class string
	X, X2 float64
	Y, Y2 int
	H     int
	Line  int    // trace line (0: none)
	Text  string // what the mark is, shown on hover
	Label string // drawn beside the mark (owed marks)
	// Evidence: 0 none, 1 the first violation's, 2 another's.
	Evidence int
	// Viol is the violation an owed mark is for (its index).
	Viol int
}

type view struct {
	Title   string
	Command string
	Mode    string
	Counts  model.Counts
	Verdict string
	// Groups are the violations by property, in order of first appearance.
	Groups []group
	Total  int // violations in all
	Lanes  []lane
	Marks  []mark
	Height int
	LabelW int // the lane names' column
	// End is the run's last instant, Focus the window the page opens on:
	// the first violation's evidence (the whole run without one), in
	// virtual milliseconds.
	End      float64
	Focus    window
	Overview overview
	Lines    map[int]string // trace lines the marks cite
}

// scale maps virtual time to milliseconds on the drawing.
type scale struct {
	end time.Duration
}

func (s scale) x(t time.Duration) float64 {
	if t < 0 {
		t = s.end
	}
	return float64(t) / float64(time.Millisecond)
}

func build(in Input) (*view, error) {
	h := in.History
	if h == nil {
		return nil, fmt.Errorf("timeline: no history")
	}
	end := runEnd(h)
	sc := scale{end: end}
	v := &view{Title: in.Title, Command: in.Command, Mode: h.Mode, End: sc.x(end), LabelW: labelW, Lines: map[int]string{}}
	ys := v.layLanes(h)
	v.Height = topPad + len(v.Lanes)*(laneH+laneGap) + 8
	// The first violation's evidence is drawn strongest: a run may break
	// a property hundreds of times, and the first is where to start.
	evidence := map[int]int{} // trace line -> 1 (first violation) or 2
	for i, viol := range in.Violations {
		for _, l := range viol.TraceLines {
			if evidence[l] == 0 || i == 0 {
				evidence[l] = min(i+1, 2)
			}
		}
	}
	v.addFaults(h, sc, ys)
	v.addCalls(h, sc, ys)
	v.addDeliveries(h, sc, ys)
	for i, viol := range in.Violations[:min(len(in.Violations), shownViolations)] {
		v.addOwed(h, sc, ys, viol, i)
	}
	for i := range v.Marks {
		m := &v.Marks[i]
		if m.Line > 0 && evidence[m.Line] > 0 {
			m.Evidence = evidence[m.Line]
		}
		if m.Line > 0 && m.Line <= len(in.Trace) {
			v.Lines[m.Line] = in.Trace[m.Line-1]
		}
	}
	// Evidence drawn last, so it sits on top of what it overlaps.
	slices.SortStableFunc(v.Marks, func(a, b mark) int {
		return cmp.Compare(rank(a.Evidence), rank(b.Evidence))
	})
	wins := v.windows(in.Violations)
	v.Groups, v.Total = groups(in.Violations, wins), len(in.Violations)
	v.Focus = v.busy()
	if len(wins) > 0 && wins[0].OK {
		v.Focus = wins[0]
	}
	v.Overview = v.overviewOf()
	v.Counts = model.CountsOf(h, v.clients(), len(h.Faults))
	if in.Counts != nil {
		v.Counts = *in.Counts
	}
	v.Verdict = "all properties hold"
	if len(in.Violations) > 0 {
		v.Verdict = model.Summarize(in.Violations)
	}
	return v, nil
}

// clients is how many client lanes v has.
func (v *view) clients() int {
	n := 0
	for _, l := range v.Lanes {
		if l.Kind == "client" {
			n++
		}
	}
	return n
}

// rank orders marks for drawing: plain ones, then other violations'
// evidence, then the first violation's, on top.
func rank(evidence int) int { return []int{0, 2, 1}[evidence] }

// shownViolations is how many violations get a mark where they were owed.
const shownViolations = 500

// addOwed marks, on the lane of the user the violation names, where the
// message it names was sequenced: the delivery that should follow it.
func (v *view) addOwed(h *model.History, sc scale, ys map[string]int, viol model.Violation, i int) {
	y, ok := ys["client/"+viol.User]
	if !ok || viol.Room == "" || viol.Seq == 0 {
		return
	}
	for _, e := range h.Events {
		if e.Kind == model.KindSend && e.OK && e.Room == viol.Room && e.Seq == viol.Seq {
			v.Marks = append(v.Marks, mark{Shape: "owed", Class: "owed", X: sc.x(e.Time), Y: y + laneH/2,
				Text:  fmt.Sprintf("%s: %s#%d, sequenced here, as %s saw it", viol.Property, full(viol.Room), viol.Seq, full(viol.User)),
				Label: fmt.Sprintf("%s %s#%d", viol.Property, short(viol.Room), viol.Seq), Evidence: min(i+1, 2), Viol: i})
			return
		}
	}
}

// runEnd is the last instant anything in h happened.
func runEnd(h *model.History) time.Duration {
	var end time.Duration
	for _, e := range h.Events {
		end = max(end, e.Time)
	}
	h.EachDelivery(func(e model.Event) { end = max(end, e.Time) })
	for _, f := range h.Faults {
		end = max(end, f.From, f.To)
	}
	return end + time.Second/2
}

// layLanes orders the lanes: Redis, the nodes, the clients, each sorted by
// name, and returns each lane's y by kind and name.
func (v *view) layLanes(h *model.History) map[string]int {
	nodes, users := map[string]bool{}, map[string]bool{}
	note := func(e model.Event) {
		if e.Node != "" {
			nodes[e.Node] = true
		}
		if e.User != "" && e.Kind != model.KindSessionClosed {
			users[e.User] = true
		}
	}
	for _, e := range h.Events {
		note(e)
	}
	h.EachDelivery(note)
	for _, f := range h.Faults {
		for _, n := range f.Nodes {
			nodes[n] = true
		}
	}
	ys := map[string]int{}
	y := topPad
	add := func(kind, name string) {
		v.Lanes = append(v.Lanes, lane{Name: full(name), Label: short(name), Kind: kind, Y: y})
		ys[kind+"/"+name] = y
		y += laneH + laneGap
	}
	add("redis", "redis")
	for _, n := range sorted(nodes) {
		add("node", n)
	}
	for _, u := range sorted(users) {
		add("client", u)
	}
	return ys
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (v *view) addFaults(h *model.History, sc scale, ys map[string]int) {
	for _, f := range h.Faults {
		var lanes []int
		for _, n := range f.Nodes {
			lanes = append(lanes, ys["node/"+n])
		}
		if f.User != "" {
			if y, ok := ys["client/"+f.User]; ok {
				lanes = append(lanes, y)
			}
		}
		if f.Redis {
			lanes = append(lanes, ys["redis/redis"])
		}
		text := faultText(f)
		kind := string(f.Kind)
		if f.Op {
			for _, y := range lanes {
				v.Marks = append(v.Marks, mark{Shape: "tick", Class: "fault op " + cssName(kind),
					X: sc.x(f.From), Y: y, Line: f.TraceLine, Text: text})
			}
			continue
		}
		x1, x2 := sc.x(f.From), sc.x(f.To)
		for _, y := range lanes {
			v.Marks = append(v.Marks, mark{Shape: "span", Class: "fault " + cssName(kind),
				X: x1, X2: x2, Y: y, H: laneH, Line: f.TraceLine, Text: text})
		}
	}
}

func faultText(f model.Fault) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fault %s", string(f.Kind))
	if len(f.Nodes) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(f.Nodes, "→"))
	}
	if f.User != "" {
		fmt.Fprintf(&b, " %s", full(f.User))
	}
	if f.Redis {
		b.WriteString(" (redis)")
	}
	if f.Msg != "" {
		fmt.Fprintf(&b, " msg %s", f.Msg)
	}
	if f.Op {
		fmt.Fprintf(&b, " at %s", clock(f.From))
	} else if f.To < 0 {
		fmt.Fprintf(&b, " from %s, never ended", clock(f.From))
	} else {
		fmt.Fprintf(&b, " %s–%s", clock(f.From), clock(f.To))
	}
	return b.String()
}

// sendKey names a message for the relay arrows.
type sendKey struct {
	room string
	seq  uint64
}

type sendAt struct {
	node string
	t    time.Duration
}

func (v *view) addCalls(h *model.History, sc scale, ys map[string]int) {
	for _, e := range h.Events {
		y, ok := ys["client/"+e.User]
		if !ok {
			continue
		}
		switch e.Kind {
		case model.KindDeliver, model.KindSessionClosed:
			continue
		case model.KindPanic:
			v.Marks = append(v.Marks, mark{Shape: "tick", Class: "panic", X: sc.x(e.Time),
				Y: ys["node/"+e.Node], Line: e.TraceLine, Text: "panic " + e.Err})
			continue
		}
		inv := e.Invoked
		if inv == 0 && e.InvokedLine == 0 {
			inv = e.Time
		}
		x1, x2 := sc.x(inv), sc.x(e.Time)
		cls := "call " + cssName(string(e.Kind))
		if !e.OK && e.Kind != model.KindDisconnect {
			cls += " failed"
		}
		v.Marks = append(v.Marks, mark{Shape: "bar", Class: cls, X: x1, X2: x2, Y: y + 6, H: laneH - 12,
			Line: e.TraceLine, Text: callText(e)})
		if e.Kind == model.KindSend && e.OK && e.Node != "" {
			v.Marks = append(v.Marks, mark{Shape: "dot", Class: "accepted", X: x2, Y: ys["node/"+e.Node] + laneH/2,
				Line: e.TraceLine, Text: fmt.Sprintf("%s sequenced %s#%d (%s) on %s", full(e.User), full(e.Room), e.Seq, full(e.MsgID), e.Node)})
		}
	}
}

func callText(e model.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", full(e.User), e.Kind)
	if e.Room != "" {
		fmt.Fprintf(&b, " %s", full(e.Room))
	}
	if e.MsgID != "" {
		fmt.Fprintf(&b, " msg %s", full(e.MsgID))
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " on %s", e.Node)
	}
	switch {
	case e.OK && e.Seq > 0:
		fmt.Fprintf(&b, ": ok seq=%d", e.Seq)
	case e.OK:
		b.WriteString(": ok")
	case e.Err != "":
		fmt.Fprintf(&b, ": %s", e.Err)
	}
	if e.Duplicate {
		b.WriteString(" (duplicate)")
	}
	if e.Vanish {
		b.WriteString(" (vanished)")
	}
	if e.Tries > 1 {
		fmt.Fprintf(&b, " after %d tries", e.Tries)
	}
	fmt.Fprintf(&b, " [%s–%s]", clock(e.Invoked), clock(e.Time))
	return b.String()
}

func (v *view) addDeliveries(h *model.History, sc scale, ys map[string]int) {
	sends := map[sendKey]sendAt{}
	for _, e := range h.Events {
		if e.Kind == model.KindSend && e.OK && !e.Duplicate {
			if _, ok := sends[sendKey{e.Room, e.Seq}]; !ok {
				sends[sendKey{e.Room, e.Seq}] = sendAt{e.Node, e.Time}
			}
		}
	}
	relayed := map[string]bool{}
	h.EachDelivery(func(e model.Event) {
		y, ok := ys["client/"+e.User]
		if !ok {
			return
		}
		cls, how := "deliver live", "live"
		if e.FromLog {
			cls, how = "deliver fromlog", "from the log"
		}
		x := sc.x(e.Time)
		v.Marks = append(v.Marks, mark{Shape: "dot", Class: cls, X: x, Y: y + laneH/2, Line: e.TraceLine,
			Text: fmt.Sprintf("%s got %s#%d (%s) on %s at %s, %s", full(e.User), full(e.Room), e.Seq, full(e.MsgID), e.Node, clock(e.Time), how)})
		s, ok := sends[sendKey{e.Room, e.Seq}]
		if !ok || e.FromLog || s.node == "" || s.node == e.Node {
			return
		}
		k := fmt.Sprintf("%s#%d>%s", e.Room, e.Seq, e.Node)
		if relayed[k] {
			return
		}
		relayed[k] = true
		v.Marks = append(v.Marks, mark{Shape: "arrow", Class: "relay", X: sc.x(s.t), Y: ys["node/"+s.node] + laneH/2,
			X2: x, Y2: ys["node/"+e.Node] + laneH/2, Line: e.TraceLine,
			Text: fmt.Sprintf("relay %s#%d %s → %s", full(e.Room), e.Seq, s.node, e.Node)})
	})
}

// clock renders virtual time as mm:ss.mmm, as the trace does.
func clock(t time.Duration) string {
	if t < 0 {
		return "end"
	}
	ms := t.Milliseconds()
	return fmt.Sprintf("%02d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}

// cssName keeps letters, digits and dashes of a kind, for a class name.
func cssName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
}

var page = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"f":   func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"add": func(a, b int) int { return a + b },
}).Parse(pageHTML))

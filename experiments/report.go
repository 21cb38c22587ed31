package experiments

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// Report is everything a report run produced.
type Report struct {
	Model     string   `json:"cost_model"`
	Load      string   `json:"load"`
	Drain     string   `json:"drain"`
	AxisA     []Row    `json:"axis_a,omitempty"`
	AxisB     []Row    `json:"axis_b,omitempty"`
	Scenario1 []Fanout `json:"scenario1,omitempty"`
	Scenario2 []Fanout `json:"scenario2,omitempty"`
}

// Checks of the issue, per row: the verdict and, when it fails, why.

// TasksOK: Tasks/s within 3% of the formula.
func (r Row) TasksOK() bool { return r.Formula > 0 && math.Abs(r.Tasks-r.Formula) <= 0.03*r.Formula }

// PoolWant is the pool the seed observed, as the issue states it: single
// at max (200) from room 90 and from 30 msg/s, near core at room 30 and at
// 10 msg/s (the seed: 170); bulk at core everywhere.
func (r Row) PoolWant() string {
	if r.Mode == "bulk" {
		return "core (30)"
	}
	if r.Room >= 90 && r.Rate >= 30 {
		return "max (200)"
	}
	if r.Room == 150 && r.Rate == 10 {
		return "170 (seed)"
	}
	return "core (30)"
}

// PoolOK compares the peak of busy workers (Row.Peak) with PoolWant (core:
// at most 40; max: 200; 170: at least 150). Busy workers above core mean
// the pool grew past core; a pool grown to max had (nearly) every worker
// busy at once.
func (r Row) PoolOK() bool {
	switch r.PoolWant() {
	case "max (200)":
		return r.Peak >= 200
	case "170 (seed)":
		return r.Peak >= 150
	}
	return r.Peak <= 40
}

// TasksPerMessage is the executor tasks one message costs its sending node
// (DESIGN §2.2): a task per member in single mode; a task per local member
// plus one per remote node in bulk mode.
func (r Row) TasksPerMessage() int {
	if r.Mode == "single" {
		return r.Room
	}
	return r.Room/Nodes + Nodes - 1
}

// Burst is the tasks the busiest node is handed at once each second: its
// senders (they send in step) times the tasks per message.
func (r Row) Burst() int { return r.busiest() * r.TasksPerMessage() }

// busiest is the most senders on one node.
func (r Row) busiest() int {
	k := 0
	for _, n := range r.Senders {
		k = max(k, n)
	}
	return k
}

// GrowthChance is the chance, over the seeded samples of senders, that
// the pool grows past core: that the busiest node is handed more than core
// + queue tasks at once, i.e. that some node holds at least
// floor(1030/T)+1 of the senders, T the tasks per message. The members are
// spread evenly (room/3 per node) and the senders drawn uniformly without
// replacement, as Senders draws them; exact (hypergeometric).
func (r Row) GrowthChance() float64 {
	t := r.TasksPerMessage()
	if t <= 0 {
		return math.NaN()
	}
	return r.chanceOfSenders(saturation/t + 1)
}

// chanceOfSenders is the chance, over the samples of senders, that some
// node holds at least need of them.
func (r Row) chanceOfSenders(need int) float64 {
	room, n := r.Room, int(r.Rate)
	if room%Nodes != 0 || n > room {
		return math.NaN()
	}
	per := room / Nodes
	lc := func(a, b int) float64 { // log C(a, b)
		if b < 0 || b > a {
			return math.Inf(-1)
		}
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	total := lc(room, n)
	p := 0.0
	for a := 0; a <= n; a++ {
		for b := 0; a+b <= n; b++ {
			c := n - a - b
			if max(a, b, c) >= need {
				p += math.Exp(lc(per, a) + lc(per, b) + lc(per, c) - total)
			}
		}
	}
	if p > 1-1e-9 { // certain (e.g. by pigeonhole), up to rounding
		return 1
	}
	return p
}

// saturation is the pool's core plus queue: a submit that finds that many
// tasks running and queued grows the pool past core.
const saturation = 30 + 1000

// why explains a pool cell that does not reproduce, from the run's own
// figures: the busiest node's burst against core + queue, the CPUs'
// utilisation.
func (r Row) why() string {
	if r.PoolOK() {
		return ""
	}
	t := r.TasksPerMessage()
	need := saturation/t + 1
	busiest := r.busiest()
	toMax := (saturation + 170 + t - 1) / t // senders on one node for a burst that grows the pool to 200
	switch {
	case r.Peak <= 40:
		return fmt.Sprintf("the pool grows past core only when a submit finds the queue (1000) full. The senders send in step, so each second the busiest node (%d of the %d senders, %v per node) is handed %d x %d = %d tasks at once, fewer than core + queue = %d, and the previous second's burst has drained (node CPUs at %.0f%%): the queue never fills. The seed's pool needs at least %d senders on one node (%s of the samples of senders), or tasks the seed's load does not describe (the seed itself names a burst of connections at the start)",
			busiest, int(r.Rate), r.Senders, busiest, t, r.Burst(), saturation, 100*r.CPU, need, pct(r.GrowthChance()))
	case r.Peak < 200 && r.PoolWant() == "max (200)":
		return fmt.Sprintf("the pool grew past core but not to max: the busiest node's burst of %d x %d = %d tasks overflows core + queue = %d by %d, and each overflowing submit adds one worker (30 + %d = %d) while the previous second's burst has drained before the next one; max needs a burst of %d, at least %d senders on one node (%s of the samples of senders)", busiest, t, r.Burst(), saturation, r.Burst()-saturation, r.Burst()-saturation, 30+r.Burst()-saturation, saturation+170, toMax, pct(r.chanceOfSenders(toMax)))
	}
	return fmt.Sprintf("the pool grew past core: the busiest node's burst of %d x %d = %d tasks against core + queue = %d, node CPUs at %.0f%%, Redis at %.0f%%", busiest, t, r.Burst(), saturation, 100*r.CPU, 100*r.Redis)
}

// Verdict is the run's properties: "all hold", or the failed ones.
func (r Row) Verdict() string {
	if r.Failed == "" && r.Violations == 0 {
		return "all hold"
	}
	return "**failed: " + r.Failed + "**"
}

func pct(p float64) string {
	switch {
	case math.IsNaN(p):
		return "-"
	case p == 0:
		return "0%"
	case p < 0.001:
		return "<0.1%"
	case p > 0.999 && p < 1:
		return ">99.9%"
	}
	return fmt.Sprintf("%.1f%%", 100*p)
}

func perNode(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, "/")
}

func mark(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// Markdown writes the report's tables.
func (rep Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Cost model: %s. Load %s + drain %s, virtual time; 3 nodes, pool core 30 / max 200 / queue 1000 / caller-runs.\n\n", rep.Model, rep.Load, rep.Drain)
	fmt.Fprint(w, "Workload: the room's members spread evenly over the nodes; msgs/s of them (a seeded sample) are the senders, each sending once a second, in step (k6 virtual users started together). Peak busy workers: the most tasks running on one node's workers at once, counted by the simulation at the executor's gates (not the relay's metrics). It exceeds core only when the pool grew past core. Burst: the tasks the busiest node is handed at once each second (its senders x tasks per message); the queue can fill only when it passes core + queue = 1030. Grows, over sender samples: the chance that some node's burst passes 1030, over every sample of the senders (exact; the run uses one sample, from its seed). Properties: every property of the model checked on the run.\n\n")
	for _, ax := range []struct {
		name string
		rows []Row
	}{{"Axis A — room size at 30 msg/s", rep.AxisA}, {"Axis B — room 150, messages per second", rep.AxisB}} {
		if len(ax.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n", ax.name)
		fmt.Fprintln(w, "| condition | mode | msgs | delivered | Tasks/s (ours) | formula | within 3% | Tasks/s (seed) | senders per node | burst | grows, over sender samples | peak busy workers (ours) | pool (seed) | pool as seed | p50 / p95 / max ms (ours) | p50 / p95 / max ms (seed) | CPU / Redis util | properties |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, r := range ax.rows {
			fmt.Fprintf(w, "| %s | %s | %d | %.1f%% | %.0f | %.0f | %s | %s | %s | %d | %s | %d | %d | %s | %.1f / %.1f / %.1f | %.0f / %.0f / %.0f | %.0f%% / %.0f%% | %s |\n",
				r.Condition, r.Mode, r.Messages, r.Delivered, r.Tasks, r.Formula, mark(r.TasksOK()), thousands(r.SeedTasks),
				perNode(r.Senders), r.Burst(), pct(r.GrowthChance()), r.Peak, r.SeedPool, mark(r.PoolOK()), r.P50, r.P95, r.Max, r.SeedP50, r.SeedP95, r.SeedMax, 100*r.CPU, 100*r.Redis, r.Verdict())
		}
		fmt.Fprintln(w)
		var notes []string
		for _, r := range ax.rows {
			if !r.PoolOK() {
				notes = append(notes, fmt.Sprintf("- %s, %s: peak busy workers %d where the seed saw %s — not reproduced: %s.", r.Condition, r.Mode, r.Peak, r.PoolWant(), r.why()))
			}
			if g := r.GrowthChance(); r.PoolOK() && g > 0.01 && g < 0.99 {
				grows := "grows past core"
				if r.Peak <= 40 {
					grows = "would grow past core"
				}
				notes = append(notes, fmt.Sprintf("- %s, %s: reproduced with this sample of senders (%s per node); over every sample the pool %s in %s of them (some node holding at least %d senders).", r.Condition, r.Mode, perNode(r.Senders), grows, pct(g), saturation/r.TasksPerMessage()+1))
			}
			if !r.TasksOK() {
				notes = append(notes, fmt.Sprintf("- %s, %s: Tasks/s %.0f is not within 3%% of the formula %.0f.", r.Condition, r.Mode, r.Tasks, r.Formula))
			}
			if r.Violations > 0 {
				notes = append(notes, fmt.Sprintf("- %s, %s: %d property violations (%s; trace %s).", r.Condition, r.Mode, r.Violations, r.Failed, r.TraceHash))
			}
		}
		if len(notes) > 0 {
			fmt.Fprintln(w, strings.Join(notes, "\n"))
			fmt.Fprintln(w)
		}
	}
	if len(rep.Scenario1) == 2 {
		s, b := rep.Scenario1[0], rep.Scenario1[1]
		ratio := s.Mean / b.Mean
		fmt.Fprintln(w, "### Scenario 1 — 200 remote users on one node (fan-out path, virtual)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| | single | bulk | single / bulk |")
		fmt.Fprintln(w, "| --- | --- | --- | --- |")
		fmt.Fprintf(w, "| ours (mean of %d messages) | %.2f ms | %.2f ms | %.1fx |\n", s.Messages, s.Mean, b.Mean, ratio)
		fmt.Fprintf(w, "| seed | %.1f ms | %.1f ms | %.1fx |\n\n", s.Seed, b.Seed, s.Seed/b.Seed)
		fmt.Fprintf(w, "Ratio within 25%% of the seed's: %s.\n\n", mark(math.Abs(ratio-s.Seed/b.Seed) <= 0.25*s.Seed/b.Seed))
	}
	if len(rep.Scenario2) > 0 {
		fmt.Fprintln(w, "### Scenario 2 — 3 remote nodes, bulk relay on 1..4 workers (mean ms, ours / seed)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| users | 1 | 2 | 3 | 4 | best pool (ours) | best (seed) |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
		for _, u := range usersOf(rep.Scenario2) {
			cells := make([]string, 4)
			for _, f := range rep.Scenario2 {
				if f.Users == u && f.Workers >= 1 && f.Workers <= 4 {
					cells[f.Workers-1] = fmt.Sprintf("%.2f / %.2f", f.Mean, f.Seed)
				}
			}
			best := Best(rep.Scenario2, u)
			fmt.Fprintf(w, "| %d | %s | %d %s | 3 |\n", u, strings.Join(cells, " | "), best, map[bool]string{true: "(= remote nodes)", false: "(**not** the remote node count)"}[best == 3])
		}
		fmt.Fprintln(w)
	}
}

func usersOf(fs []Fanout) []int {
	var out []int
	for _, f := range fs {
		if len(out) == 0 || out[len(out)-1] != f.Users {
			out = append(out, f.Users)
		}
	}
	return out
}

// JSONRows writes one JSON object per line: every Axis row.
func (rep Report) JSONRows(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, r := range append(append([]Row(nil), rep.AxisA...), rep.AxisB...) {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	for _, f := range append(append([]Fanout(nil), rep.Scenario1...), rep.Scenario2...) {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

func thousands(x float64) string {
	n := int(math.Round(x))
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d,%03d", n/1000, n%1000)
}

// Run runs what names asks for: axis-a, axis-b, scenario1, scenario2 or all.
// Scenario 1 and 2 send messages messages each (the seed: 100).
func Run(o Options, what string, messages int, s2users []int) (Report, error) {
	rep := Report{Model: o.CPU.String(), Load: o.Load.String(), Drain: o.Drain.String()}
	cache := map[string]Row{}
	axis := func(conds []Condition) []Row {
		var rows []Row
		for _, c := range conds {
			for _, m := range Modes {
				k := fmt.Sprintf("%d/%g/%s", c.Room, c.Rate, m)
				r, ok := cache[k]
				if !ok {
					r = RunCondition(o, c, m)
					cache[k] = r
				}
				r.Axis, r.SeedTasks = c.Axis, c.Seed.Tasks[m]
				rows = append(rows, r)
			}
		}
		return rows
	}
	all := what == "all"
	switch {
	case all || what == "axis-a" || what == "axis-b" || what == "scenario1" || what == "scenario2":
	default:
		return rep, fmt.Errorf("unknown report %q (want axis-a, axis-b, scenario1, scenario2 or all)", what)
	}
	if all || what == "axis-a" {
		rep.AxisA = axis(AxisA())
	}
	if all || what == "axis-b" {
		rep.AxisB = axis(AxisB())
	}
	if all || what == "scenario1" {
		if o.Progress != nil {
			o.Progress("scenario 1")
		}
		s, b := Scenario1(o, messages)
		rep.Scenario1 = []Fanout{s, b}
	}
	if all || what == "scenario2" {
		rep.Scenario2 = Scenario2(o, s2users, messages)
	}
	return rep, nil
}

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

// why explains a pool cell that does not reproduce, from the run's own
// figures (utilisation of the nodes' CPUs and of Redis).
func (r Row) why() string {
	if r.PoolOK() {
		return ""
	}
	if r.Peak < 200 && r.PoolWant() != "core (30)" {
		return fmt.Sprintf("the pool grows past core only when the queue (1000) is full, i.e. when the workers are saturated; here the node CPUs ran at %.0f%% and Redis at %.0f%%, so a task held its worker for well under the ~%.0f ms it would take", 100*r.CPU, 100*r.Redis, 30000/(r.Formula/Nodes))
	}
	return fmt.Sprintf("workers saturated: node CPUs at %.0f%%, Redis at %.0f%%", 100*r.CPU, 100*r.Redis)
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
	fmt.Fprint(w, "Peak busy workers: the most tasks running on one node's workers at once, counted by the simulation at the executor's gates (not the relay's metrics). It exceeds core only when the pool grew past core.\n\n")
	for _, ax := range []struct {
		name string
		rows []Row
	}{{"Axis A — room size at 30 msg/s", rep.AxisA}, {"Axis B — room 150, messages per second", rep.AxisB}} {
		if len(ax.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "### %s\n\n", ax.name)
		fmt.Fprintln(w, "| condition | mode | msgs | delivered | Tasks/s (ours) | formula | within 3% | Tasks/s (seed) | peak busy workers (ours) | pool (seed) | pool as seed | p50 / p95 / max ms (ours) | p50 / p95 / max ms (seed) | CPU / Redis util |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, r := range ax.rows {
			fmt.Fprintf(w, "| %s | %s | %d | %.1f%% | %.0f | %.0f | %s | %s | %d | %d | %s | %.1f / %.1f / %.1f | %.0f / %.0f / %.0f | %.0f%% / %.0f%% |\n",
				r.Condition, r.Mode, r.Messages, r.Delivered, r.Tasks, r.Formula, mark(r.TasksOK()), thousands(r.SeedTasks),
				r.Peak, r.SeedPool, mark(r.PoolOK()), r.P50, r.P95, r.Max, r.SeedP50, r.SeedP95, r.SeedMax, 100*r.CPU, 100*r.Redis)
		}
		fmt.Fprintln(w)
		var notes []string
		for _, r := range ax.rows {
			if !r.PoolOK() {
				notes = append(notes, fmt.Sprintf("- %s, %s: peak busy workers %d where the seed saw %s — not reproduced: %s.", r.Condition, r.Mode, r.Peak, r.PoolWant(), r.why()))
			}
			if !r.TasksOK() {
				notes = append(notes, fmt.Sprintf("- %s, %s: Tasks/s %.0f is not within 3%% of the formula %.0f.", r.Condition, r.Mode, r.Tasks, r.Formula))
			}
			if r.Violations > 0 {
				notes = append(notes, fmt.Sprintf("- %s, %s: %d property violations (trace %s).", r.Condition, r.Mode, r.Violations, r.TraceHash))
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

package realcluster

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
)

// check is one of model's checkers that judges a saved history from its
// records alone.
type check struct {
	prop string
	fn   func(*model.History) []model.Violation
}

// judged are the checks of a saved history, real or simulated: they read
// only what the clients saw, the room logs, and (for a simulated run) its
// samples and leftover goroutines.
var judged = []check{
	{model.PropNoLoss, model.CheckNoLoss},
	{model.PropWindows, model.CheckWindows},
	{model.PropOrdering, model.CheckOrdering},
	{model.PropNoStray, model.CheckNoStray},
	{model.PropExactlyOnce, model.CheckExactlyOnce},
	{model.PropPanics, model.CheckNoPanics},
	{model.PropForged, model.CheckForgedRejected},
	{model.PropContent, model.CheckContent},
	{model.PropBadNames, model.CheckBadNamesRefused},
	{model.PropBadNodeIDs, model.CheckBadNodeIDs},
	{model.PropStreamLeak, model.CheckStreamLeaks},
	{model.PropGoroutineLeak, model.CheckGoroutineLeaks},
}

// NotJudged names the properties CheckHistory leaves out, and why.
var NotJudged = map[string]string{
	model.PropWorkers:         "needs the executor's own gate counts (tasks per message, workers per sample): a real node's metrics, not what a client sees",
	model.PropTimely:          "real time on a shared machine: measured and reported, never asserted",
	model.PropModeEquivalence: "compares two calm runs of one seed; a real run's interleaving is not reproducible",
}

// CheckHistory runs the checks a saved history can be judged by, in a
// fixed order. On a real run's history the stream-leak check is vacuous
// (a node's session closes are not observable from outside, and a real
// client never vanishes) and so is the goroutine one (no goroutine dump).
func CheckHistory(h *model.History) []model.Violation {
	var out []model.Violation
	for _, c := range judged {
		out = append(out, c.fn(h)...)
	}
	return out
}

// JudgedProperties lists the properties CheckHistory judges.
func JudgedProperties() []string {
	out := make([]string, len(judged))
	for i, c := range judged {
		out[i] = c.prop
	}
	return out
}

// Latency is the live deliveries' latency: from the send's invocation to
// the member's first receipt, for sends acked at the first try.
type Latency struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func (l Latency) String() string {
	if l.N == 0 {
		return "no live deliveries"
	}
	return fmt.Sprintf("p50 %v, p90 %v, p99 %v, max %v over %d live deliveries",
		l.P50.Round(time.Microsecond), l.P90.Round(time.Microsecond), l.P99.Round(time.Microsecond), l.Max.Round(time.Microsecond), l.N)
}

func measureLatency(h *model.History) Latency {
	type key struct {
		room string
		seq  uint64
	}
	sent := map[key]time.Duration{}
	for _, ev := range h.Events {
		if ev.Kind == model.KindSend && ev.OK && !ev.Duplicate && ev.Tries == 1 {
			sent[key{ev.Room, ev.Seq}] = ev.Invoked
		}
	}
	type ukey struct {
		user string
		k    key
	}
	seen := map[ukey]bool{}
	var ds []time.Duration
	h.EachDelivery(func(ev model.Event) {
		k := key{ev.Room, ev.Seq}
		at, ok := sent[k]
		if !ok || ev.FromLog || seen[ukey{ev.User, k}] {
			return
		}
		seen[ukey{ev.User, k}] = true
		ds = append(ds, ev.Time-at)
	})
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return Latency{N: len(ds), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: ds[len(ds)-1]}
}

// maxShown bounds the violations a report lists.
const maxShown = 20

// WriteViolations lists the violations (at most maxShown) and their
// summary.
func WriteViolations(w io.Writer, vs []model.Violation) {
	for i, v := range vs {
		if i == maxShown {
			fmt.Fprintf(w, "  ... and %d more\n", len(vs)-maxShown)
			break
		}
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "violations:  %s\n", model.Summarize(vs))
}

// WriteSummary prints a real run's report; the last line is
// "real: <N> ops, <F> faults, violations: <V>".
func WriteSummary(w io.Writer, r *Result) {
	c := r.Config
	fmt.Fprintf(w, "relaysim real seed=%#x mode=%s nodes=%d users=%d rooms=%d duration=%v\n", c.Seed, c.Mode, c.Nodes, c.Users, c.Rooms, c.Duration)
	kinds := make([]string, 0, len(r.Faults))
	for _, k := range sortedKeys(r.Faults) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, r.Faults[k]))
	}
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	fmt.Fprintf(w, "faults:      %s (%d injected)\n", strings.Join(kinds, ", "), r.FaultCount())
	fmt.Fprintf(w, "messages:    %d sent, %d acked; %d deliveries (%d live, %d from the log)\n", r.Sends, r.SendsOK, r.Live+r.FromLog, r.Live, r.FromLog)
	ops := 0.0
	if r.Load > 0 {
		ops = float64(r.Ops) / r.Load.Seconds()
	}
	settled := "settled"
	if !r.Settled {
		settled = "NOT settled"
	}
	fmt.Fprintf(w, "time:        load %v, liveness %v (%s); %d ops (%.1f/s)\n", r.Load.Round(time.Millisecond), r.Settle.Round(time.Millisecond), settled, r.Ops, ops)
	fmt.Fprintf(w, "latency:     %s (measured, not asserted)\n", r.Latency)
	fmt.Fprintf(w, "judged:      %s\n", strings.Join(JudgedProperties(), ", "))
	fmt.Fprintf(w, "not judged:  %s (docs/real-cluster.md says why)\n", strings.Join(sortedKeys(NotJudged), ", "))
	fmt.Fprintf(w, "history:     %s\n", r.History)
	if r.Probes != nil {
		fmt.Fprintf(w, "probes:      %s\n", ProbesLine(r.Probes))
	}
	fmt.Fprintf(w, "processes:   %d started, all stopped (pids %s)\n", len(r.PIDs), pidList(r.PIDs))
	for _, e := range r.Errs {
		fmt.Fprintf(w, "harness:     %v\n", e)
	}
	WriteViolations(w, r.Violations)
	fmt.Fprintf(w, "real: %d ops, %d faults, violations: %d\n", r.Ops, r.FaultCount(), len(r.Violations))
}

func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

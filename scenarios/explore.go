package scenarios

import (
	"embed"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// This file is the model checker's unit, the small story: a scenario
// file's setup commands, then an `explore` block of concurrent steps. Every
// schedule of the block is a fresh cluster that replays the setup, arms the
// explorer, issues every step at once and runs to the horizon (the
// explorer choosing every order and fault there), then heals, reconnects
// everyone, drains and checks. The search is dst.Explorer's.

// ExploreOptions are a search's bounds and budgets. A story's `explore`
// arguments override the defaults the caller passes (the command line's).
type ExploreOptions struct {
	// Bound is the preemption bound (< 0: none).
	Bound int
	// Budget caps each fault class per schedule: sim.ExCrash, ExReboot,
	// ExDrop, ExLose, ExError, ExDelay, ExBreak, ExPartition, ExClientDrop,
	// ExClientLose, ExClientDup, and the timers fired early, ExTimer.
	Budget map[string]int
	// Horizon is how long the explored window lasts (virtual time from the
	// steps); Drain the liveness phase after it.
	Horizon, Drain time.Duration
	// Limit caps the schedules (0: none); Reduce selects DPOR (false: the
	// naive search).
	Limit  int
	Reduce bool
	// Depth, when > 0, explores no alternative deeper than that many
	// choices (the search then says exhausted=no if it cut one).
	Depth int
	// Replay, when set, runs just this schedule; ReplayBuild is the build
	// its file says it was found on ("" for an older file).
	Replay      []string
	ReplayBuild string
	// Stop, when set, is asked after each schedule whether to stop early
	// (a time budget: the search then reports itself not exhausted).
	Stop func(r *ExploreReport) bool
	// Shard i of n runs only the schedules of the first branching choices
	// whose index mod n is i (see ExploreReport.Shard): n <= 1 runs all.
	Shard, Shards int
	// Fixed names the settings the caller fixed (the command line's flags
	// given explicitly: "bound", "crashes", "horizon"...): a story's own
	// argument of that name does not override them (Overridden says so).
	Fixed map[string]bool
	// Overridden is what parseExplore left out of a story's arguments.
	Overridden []string
	// Iterate runs the search at bound 0, 1, ... up to Bound (none: until
	// a bound refuses nothing), stopping at the first bound with a
	// violation (dst.IterateBounds); Limit is then the whole iteration's.
	Iterate bool
	// Sample, when > 0, is the schedules a PCT sampler of depth
	// SampleDepth and seed SampleSeed draws after a search stopped by its
	// limit, its time budget or the caller (exploreSample).
	Sample      int
	SampleDepth int
	SampleSeed  dst.Seed
}

// DefaultExploreOptions: unbounded, no faults, a 3 s horizon, a 2 s drain.
func DefaultExploreOptions() ExploreOptions {
	return ExploreOptions{Bound: -1, Budget: map[string]int{}, Horizon: 3 * time.Second, Drain: 2 * time.Second, Reduce: true}
}

// ExploreReport is what a search found (TLC-style: schedules, distinct
// terminal states, depth, what the bounds cut, whether it finished).
type ExploreReport struct {
	Mode      system.Mode
	Opts      ExploreOptions
	Schedules int
	// Blocked are schedules the sleep sets proved redundant partway.
	Blocked  int
	MaxDepth int
	// Terminal holds the distinct terminal states: what each user saw per
	// room, the room logs and the properties that failed.
	Terminal map[string]bool
	// BoundHit and BudgetHit count choices the bound or the fault budgets
	// left out.
	BoundHit, BudgetHit, DepthHit int
	Exhausted                     bool
	// Violations are the schedules that broke a property (the first
	// few, maxViolations), each with its schedule; Failing counts them
	// all (the report's "violations: N").
	Violations []ExploreViolation
	Failing    int
	// Faults counts the schedules that chose at least one fault.
	Faults int
	// HorizonCut counts the schedules the horizon cut with work pending
	// (ops parked, calls in flight, relay timers running): what followed
	// was not explored, so the search is not exhausted. HorizonCutBy
	// counts them per kind of work pending (horizonWork): a schedule may
	// count under several.
	HorizonCut   int
	HorizonCutBy map[string]int
	// BudgetHitBy is BudgetHit per fault class.
	BudgetHitBy map[string]int
	// StoppedBy says why the search stopped before it was exhausted:
	// "limit" (the schedule limit), "time" (a time budget), "first" (the
	// first violation), "stop" (the caller's Stop), "" (it was not).
	StoppedBy string
	// Overridden lists the story's own arguments the caller's fixed
	// settings overrode, as "bound=0 (fixed: 2)".
	Overridden []string
	// Probes counts, per code probe of the relay (system.Probes), the
	// schedules that hit it: whether the story reached the code a change
	// touched (setup included: every schedule replays it).
	Probes map[string]int
	// Unknown counts, over the schedules, the Redis ops whose footprint
	// the classifier could not show (an unknown command, a script it
	// cannot check): they were taken to touch everything (sound, slower).
	Unknown map[string]int
	// FirstViolation is how many schedules the search ran until the
	// first failing one, that one included (0: none failed): over the
	// bounds in order when iterated, then the PCT fallback's.
	FirstViolation int
	// BoundHeld counts the default picks the bound held back
	// (dst.Explorer.BoundHeld): with BoundHit, what the bound refused.
	BoundHeld int
	// Iteration and Bounds, for an iterated search (ExploreOptions.Iterate):
	// what iterating found, and each bound's own report. The report's
	// counts are then the iteration's: schedules, terminal states,
	// probes and violations over every bound; its cuts, horizon cut and
	// StoppedBy the last bound's; Exhausted when every bound's was.
	Iteration *dst.Iteration
	Bounds    []*ExploreReport
	// Sampled is the PCT fallback's, when it ran: its schedules are not
	// counted in Schedules, its failing ones are in Failing and its first
	// few in Violations (each replays as any schedule does).
	Sampled *SampleReport
	// firstDepth is the choices of the search's first schedule (the
	// default picks: the same however the search is stopped), the
	// sampler's first guess of a run's length.
	firstDepth int
}

// SampleReport is what the PCT fallback drew after a search that could
// not finish.
type SampleReport struct {
	Fallback dst.Fallback
	// Terminal counts the distinct terminal states the sampled schedules
	// reached; New those the search had not; Faults the sampled
	// schedules that chose at least one fault.
	Terminal, New, Faults int
}

// StaleScheduleError is a replayed schedule that diverged on a build
// other than the one it was found on: the code changed under it, which
// is no determinism bug (a harness error: the schedule says nothing of
// this build).
type StaleScheduleError struct {
	Found, This string
	Err         error
}

func (e *StaleScheduleError) Error() string {
	return fmt.Sprintf("this schedule no longer applies to this build (found on %s, this is %s): %v", e.Found, e.This, e.Err)
}

func (e *StaleScheduleError) Unwrap() error { return e.Err }

// ExploreViolation is one failing schedule.
type ExploreViolation struct {
	Schedule   []string
	Violations []model.Violation
	Trace      []string
	// Whole is the failing schedule's whole trace, from running the
	// schedule again keeping every line (the search keeps only a tail);
	// its hash is the search run's, else the search reports a divergence.
	Whole *sim.Trace
	// History is the failing schedule's history (for a timeline).
	History *model.History
}

// maxViolations is how many failing schedules a report keeps.
const maxViolations = 3

// exploreStep is one concurrent step of a story.
type exploreStep struct {
	cmd  string
	args *args
}

// exploreStepArgs are the steps and the arguments each takes.
var exploreStepArgs = map[string][]string{
	"send":       {"user", "room", "msg", "node"},
	"join":       {"user", "room", "node"},
	"leave":      {"user", "room", "node"},
	"connect":    {"user", "node"},
	"disconnect": {"user"},
	"crash":      {"node"},
}

// parseExplore reads an explore command's options (over defaults) and its
// steps, one per input line.
func parseExplore(e *Env, d *datadriven.TestData, def ExploreOptions) (ExploreOptions, []exploreStep, error) {
	o := def
	o.Budget = map[string]int{}
	for k, v := range def.Budget {
		o.Budget[k] = v
	}
	budgets := map[string]string{}
	takes := []string{"bound", "horizon", "drain", "limit"}
	for _, b := range sim.ExploreBudgets {
		budgets[b.Arg] = b.Class
		takes = append(takes, b.Arg)
	}
	fixed := map[string]string{"bound": boundString(def.Bound), "horizon": def.Horizon.String(), "drain": def.Drain.String(), "limit": strconv.Itoa(def.Limit)}
	for k, cls := range budgets {
		fixed[k] = strconv.Itoa(def.Budget[cls])
	}
	for _, arg := range d.CmdArgs {
		if len(arg.Vals) != 1 {
			return o, nil, fmt.Errorf("explore: %s= takes one value", arg.Key)
		}
		v := arg.Vals[0]
		if def.Fixed[arg.Key] {
			if v != fixed[arg.Key] {
				o.Overridden = append(o.Overridden, fmt.Sprintf("%s=%s (fixed: %s)", arg.Key, v, fixed[arg.Key]))
			}
			continue
		}
		var err error
		switch arg.Key {
		case "bound":
			if v == "none" {
				o.Bound = -1
			} else {
				o.Bound, err = strconv.Atoi(v)
			}
		case "horizon":
			o.Horizon, err = time.ParseDuration(v)
		case "drain":
			o.Drain, err = time.ParseDuration(v)
		case "limit":
			o.Limit, err = strconv.Atoi(v)
		default:
			cls, ok := budgets[arg.Key]
			if !ok {
				return o, nil, fmt.Errorf("explore: unknown argument %q (it takes %s)", arg.Key, strings.Join(takes, ", "))
			}
			o.Budget[cls], err = strconv.Atoi(v)
		}
		if err != nil {
			return o, nil, fmt.Errorf("explore: %s=%s: %v", arg.Key, v, err)
		}
	}
	var steps []exploreStep
	for i, line := range strings.Split(d.Input, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		cmd, cargs, err := datadriven.ParseLine(line)
		if err != nil {
			return o, nil, fmt.Errorf("explore: step %d: %v", i+1, err)
		}
		known, ok := exploreStepArgs[cmd]
		if !ok {
			return o, nil, fmt.Errorf("explore: step %d: unknown step %q (steps: send, join, leave, connect, disconnect, crash)", i+1, cmd)
		}
		a, err := newArgs(e, &datadriven.TestData{Cmd: cmd, CmdArgs: cargs}, known...)
		if err != nil {
			return o, nil, fmt.Errorf("explore: step %d: %v", i+1, err)
		}
		steps = append(steps, exploreStep{cmd: cmd, args: a})
	}
	if len(steps) == 0 {
		return o, nil, fmt.Errorf("explore: no steps (list them under the command, one per line)")
	}
	return o, steps, nil
}

// issue starts step s on env's cluster without waiting for it.
func (s exploreStep) issue(env *Env) error {
	a := s.args
	a.e, a.err = env, nil
	c := env.c
	now := c.Now()
	switch s.cmd {
	case "send":
		user, room, node := a.str("user", true), a.str("room", true), a.node("node", false)
		msgs := a.list("msg")
		if len(msgs) == 0 {
			a.fail("missing argument msg=")
		}
		for _, m := range msgs { // a burst: one client sends them in turn
			c.Do(sim.Action{At: now, User: user, Kind: sim.ActSend, Room: room, MsgID: m, Node: node})
		}
	case "join":
		user, room, node := a.str("user", true), a.str("room", true), a.node("node", false)
		c.Do(sim.Action{At: now, User: user, Kind: sim.ActJoin, Room: room, Node: node})
	case "leave":
		user, room, node := a.str("user", true), a.str("room", true), a.node("node", false)
		c.Do(sim.Action{At: now, User: user, Kind: sim.ActLeave, Room: room, Node: node})
	case "connect":
		user, node := a.str("user", true), a.node("node", true)
		c.Do(sim.Action{At: now, User: user, Kind: sim.ActConnect, Node: node})
	case "disconnect":
		c.Do(sim.Action{At: now, User: a.str("user", true), Kind: sim.ActDisconnect})
	case "crash":
		if n := a.node("node", true); a.err == nil {
			c.CrashStep(n)
		}
	}
	return a.err
}

// Explore runs the search of one story in mode: setup is the file's
// commands before the block, d the `explore` command. Call it inside a
// bubble; every schedule's cluster is closed before the next starts.
func Explore(setup []*datadriven.TestData, d *datadriven.TestData, mode system.Mode, def ExploreOptions) (*ExploreReport, error) {
	probe := NewEnv(mode)
	o, steps, err := parseExplore(probe, d, def)
	if err != nil {
		return nil, badInput(err)
	}
	// Every schedule builds and drops a whole cluster: a laxer collector
	// saves about a seventh of the CPU (measured on send-races-leave).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var r *ExploreReport
	if o.Iterate && o.Replay == nil {
		r, err = exploreIterate(setup, steps, mode, o)
	} else {
		r, err = exploreSearch(setup, steps, mode, o)
	}
	if err != nil || o.Replay != nil || o.Sample <= 0 {
		return r, err
	}
	switch r.StoppedBy {
	case "limit", "time", "stop": // not "first": that stop was asked for
		return r, exploreSample(setup, steps, mode, o, r)
	}
	return r, nil
}

// exploreSearch is one search of a story's steps at o's bound.
func exploreSearch(setup []*datadriven.TestData, steps []exploreStep, mode system.Mode, o ExploreOptions) (*ExploreReport, error) {
	ex := dst.NewExplorer(o.Reduce, o.Bound, o.Budget)
	ex.Replay = o.Replay
	ex.DepthBudget = o.Depth
	r := &ExploreReport{Mode: mode, Opts: o, Terminal: map[string]bool{}, Unknown: map[string]int{}, Probes: map[string]int{}, Overridden: o.Overridden}
	for {
		one, err := exploreRun(setup, steps, mode, o, ex)
		if err != nil {
			return r, err
		}
		out, vs, trace, faulted, cut, h := one.out, one.vs, one.trace, one.faulted, one.cut, one.h
		for why, n := range one.unknown {
			r.Unknown[why] += n
		}
		for name := range one.probes {
			r.Probes[name]++
		}
		if ex.Divergence != nil {
			if this := sim.SourceBuild(); o.Replay != nil && !sim.SameBuild(o.ReplayBuild, this) {
				return r, &StaleScheduleError{Found: o.ReplayBuild, This: this, Err: ex.Divergence}
			}
			return r, fmt.Errorf("schedule %d did not repeat itself (a determinism bug): %w", ex.Schedules, ex.Divergence)
		}
		r.Terminal[out] = true
		if faulted {
			r.Faults++
		}
		if len(cut) > 0 {
			r.HorizonCut++
			if r.HorizonCutBy == nil {
				r.HorizonCutBy = map[string]int{}
			}
			for _, w := range cut {
				r.HorizonCutBy[w]++
			}
		}
		if len(vs) > 0 {
			r.Failing++
			if r.FirstViolation == 0 {
				r.FirstViolation = ex.Schedules
			}
		}
		if len(vs) > 0 && len(r.Violations) < maxViolations {
			v := ExploreViolation{Schedule: ex.Schedule(), Violations: vs, Trace: trace.Tail(80), History: h}
			if v.Whole, err = wholeTrace(setup, steps, mode, o, v.Schedule, trace.Hash()); err != nil {
				return r, err
			}
			r.Violations = append(r.Violations, v)
		}
		if ex.Schedules == 1 {
			r.firstDepth = len(ex.Schedule())
		}
		more := ex.Next() // analyses the run: the counts below include it
		r.Schedules, r.Blocked, r.MaxDepth, r.BoundHit, r.BudgetHit, r.DepthHit = ex.Schedules, ex.Blocked, ex.MaxDepth, ex.BoundHit, ex.BudgetHit, ex.DepthHit
		r.BoundHeld = ex.BoundHeld
		r.BudgetHitBy = ex.BudgetHitBy
		if !more {
			r.Exhausted = o.Replay == nil && r.DepthHit == 0 && r.HorizonCut == 0
			return r, nil
		}
		if o.Limit > 0 && r.Schedules >= o.Limit {
			r.StoppedBy = "limit"
			return r, nil
		}
		if o.Stop != nil && o.Stop(r) {
			if r.StoppedBy == "" {
				r.StoppedBy = "stop"
			}
			return r, nil
		}
	}
}

// wholeTrace runs a failing schedule again, alone, keeping its whole trace
// (a replay keeps every line), and checks that it ran as the search's run
// did (the same trace hash).
func wholeTrace(setup []*datadriven.TestData, steps []exploreStep, mode system.Mode, o ExploreOptions, schedule []string, hash string) (*sim.Trace, error) {
	ex := dst.NewExplorer(o.Reduce, o.Bound, o.Budget)
	ex.Replay = schedule
	ex.DepthBudget = o.Depth
	_, _, trace, _, _, _, err := exploreOnce(setup, steps, mode, o, ex)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the failing schedule again, keeping its trace: %w", err)
	case ex.Divergence != nil:
		return nil, fmt.Errorf("the failing schedule did not repeat itself (a determinism bug): %w", ex.Divergence)
	case trace.Hash() != hash:
		return nil, fmt.Errorf("the failing schedule ran differently again (trace hash %s, then %s): a determinism bug", hash, trace.Hash())
	}
	return trace, nil
}

// exploreOnce runs one schedule and returns its terminal state and
// violations; cut reports work pending when the explored window closed (ops parked,
// calls in flight, relay timers running: horizonWork): what followed was
// run, not explored.
func exploreOnce(setup []*datadriven.TestData, steps []exploreStep, mode system.Mode, o ExploreOptions, ex *dst.Explorer) (out string, vs []model.Violation, trace *sim.Trace, faulted, cut bool, h *model.History, err error) {
	r, err := exploreRun(setup, steps, mode, o, ex)
	return r.out, r.vs, r.trace, r.faulted, len(r.cut) > 0, r.h, err
}

// The kinds of work a horizon may cut (ExploreReport.HorizonCutBy), in
// the report's order.
const (
	cutOps    = "ops parked"
	cutCalls  = "calls in flight"
	cutTimers = "relay timers"
)

var horizonWorkOrder = []string{cutOps, cutCalls, cutTimers}

// horizonWork is the work pending on c when the explored window closes:
// ops parked and not held, client calls in flight or queued
// (Cluster.HorizonPending), and the relay's work waiting on its own
// timers — a retry's or a stream's back-off, a stream's linger
// (Cluster.HorizonTimers). Empty: nothing the window left was cut.
func horizonWork(c *sim.Cluster) []string {
	var w []string
	ops, calls := c.HorizonPending()
	if ops > 0 {
		w = append(w, cutOps)
	}
	if calls > 0 {
		w = append(w, cutCalls)
	}
	if c.HorizonTimers() > 0 {
		w = append(w, cutTimers)
	}
	return w
}

// onceResult is what one schedule ended with: its terminal state and
// violations (exploreOnce), and what the report adds up over schedules:
// the ops whose footprint was unknown (taken to touch everything) and the
// code probes the run hit.
type onceResult struct {
	out     string
	vs      []model.Violation
	trace   *sim.Trace
	faulted bool
	cut     []string // horizonWork
	h       *model.History
	unknown map[string]int
	probes  map[string]int
}

// exploreRun runs one schedule (exploreOnce).
func exploreRun(setup []*datadriven.TestData, steps []exploreStep, mode system.Mode, o ExploreOptions, ex *dst.Explorer) (res onceResult, err error) {
	env := NewEnv(mode)
	env.explorer = ex
	defer env.Close()
	for _, d := range setup {
		if _, err := env.Handle(d); err != nil {
			return res, fmt.Errorf("setup under exploration: %s: %w", d.Pos, err)
		}
	}
	c := env.c
	if c == nil {
		return res, errNoCluster
	}
	c.FinalCountsOnly = true
	c.ArmExplore()
	for _, s := range steps {
		if err := s.issue(env); err != nil {
			return res, err
		}
	}
	c.Sched.RunFor(o.Horizon)
	cut := horizonWork(c)
	c.DisarmExplore()
	if err := c.Drain(o.Drain, o.Drain); err != nil {
		return res, fmt.Errorf("liveness: %w", err)
	}
	h, err := c.Snapshot()
	if err != nil {
		return res, fmt.Errorf("read the room logs: %w", err)
	}
	// In a story no fault happens unless chosen: with none chosen, timely
	// delivery is judged with no fault excuse, churn or not.
	faulted := c.Stats.FaultsInjected > 0
	h.FaultFree = !faulted && sim.OnlyRefusals(h.Faults)
	vs := model.Check(h)
	// The search keeps only the trace's tail (a replay keeps it all).
	return onceResult{out: terminalState(h, vs), vs: vs, trace: c.Trace, faulted: faulted, cut: cut, h: h,
		unknown: c.UnknownFootprints(), probes: c.Probes()}, nil
}

// terminalState renders what a schedule ended with: each user's
// deliveries per room (seq, message, live or from the log), the room logs
// and the properties that failed.
func terminalState(h *model.History, vs []model.Violation) string {
	seen := map[string][]string{}
	h.EachDelivery(func(ev model.Event) {
		k := ev.User + " " + ev.Room
		d := fmt.Sprintf("%d:%s", ev.Seq, ev.MsgID)
		if ev.FromLog {
			d += "(log)"
		}
		seen[k] = append(seen[k], d)
	})
	var b strings.Builder
	for _, k := range sortedStrings(seen) {
		fmt.Fprintf(&b, "%s=%s;", k, strings.Join(seen[k], ","))
	}
	b.WriteString("|")
	rooms := make([]string, 0, len(h.Final.Logs))
	for r := range h.Final.Logs {
		rooms = append(rooms, r)
	}
	sort.Strings(rooms)
	for _, r := range rooms {
		fmt.Fprintf(&b, "%s:", r)
		for _, le := range h.Final.Logs[r] {
			fmt.Fprintf(&b, "%d=%s/%s,", le.Seq, le.Sender, le.MsgID)
		}
		b.WriteString(";")
	}
	b.WriteString("|")
	props := map[string]bool{}
	for _, v := range vs {
		props[v.Property] = true
	}
	b.WriteString(strings.Join(sortedStrings(props), ","))
	return b.String()
}

func sortedStrings[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// String is the report as a story pins it: the search's size and verdict.
func (r *ExploreReport) String() string {
	var b strings.Builder
	o := r.Opts
	if r.Iteration != nil {
		r.iteratedString(&b)
	} else {
		r.cutString(&b)
	}
	switch r.StoppedBy {
	case "limit":
		fmt.Fprintf(&b, "stopped by the schedule limit (%d)\n", o.Limit)
	case "time":
		b.WriteString("stopped by the time budget\n")
	case "first":
		b.WriteString("stopped at the first violation\n")
	case "stop":
		b.WriteString("stopped by the caller\n")
	}
	if len(r.Unknown) > 0 {
		n, whys := 0, []string{}
		for _, why := range sortedStrings(r.Unknown) {
			n += r.Unknown[why]
			whys = append(whys, fmt.Sprintf("%s x%d", why, r.Unknown[why]))
		}
		fmt.Fprintf(&b, "footprints unknown, taken to touch everything: %d (%s)\n", n, strings.Join(whys, "; "))
	}
	if len(r.Probes) > 0 {
		var parts []string
		for _, name := range sortedStrings(r.Probes) {
			parts = append(parts, fmt.Sprintf("%s=%d", name, r.Probes[name]))
		}
		fmt.Fprintf(&b, "probes hit (schedules): %d of %d: %s\n", len(r.Probes), len(system.Probes()), strings.Join(parts, " "))
	} else {
		fmt.Fprintf(&b, "probes hit (schedules): 0 of %d\n", len(system.Probes()))
	}
	if r.Sampled != nil {
		fmt.Fprintf(&b, "%s\n", r.Sampled.Fallback)
		fmt.Fprintf(&b, "PCT terminal states: %d, not reached by the search: %d, with a fault: %d\n", r.Sampled.Terminal, r.Sampled.New, r.Sampled.Faults)
	}
	fmt.Fprintf(&b, "exhausted: %s, violations: %d\n", map[bool]string{true: "yes", false: "no"}[r.Exhausted], r.Failing)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s\n", model.Summarize(v.Violations))
	}
	return b.String()
}

// cutString is a search's size and what cut it (an iterated search says
// the same per bound: iteratedString).
func (r *ExploreReport) cutString(b *strings.Builder) {
	o := r.Opts
	fmt.Fprintf(b, "bound=%s budgets: %s\n", boundString(o.Bound), formatBudget(o.Budget))
	if len(r.Overridden) > 0 {
		fmt.Fprintf(b, "the command line overrides the story's %s\n", strings.Join(r.Overridden, ", "))
	}
	fmt.Fprintf(b, "schedules: %d (redundant %d), terminal states: %d, max depth: %d\n", r.Schedules, r.Blocked, len(r.Terminal), r.MaxDepth)
	fmt.Fprintf(b, "cut by the bound: %d, by the budgets: %d, with a fault: %d\n", r.BoundHit, r.BudgetHit, r.Faults)
	if len(r.BudgetHitBy) > 0 {
		var parts []string
		for _, k := range sortedStrings(r.BudgetHitBy) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, r.BudgetHitBy[k]))
		}
		fmt.Fprintf(b, "cut by each budget: %s\n", strings.Join(parts, " "))
	}
	if r.DepthHit > 0 {
		fmt.Fprintf(b, "cut by the depth budget (%d choices): %d\n", o.Depth, r.DepthHit)
	}
	if r.HorizonCut > 0 {
		var by []string
		for _, w := range horizonWorkOrder {
			if n := r.HorizonCutBy[w]; n > 0 {
				by = append(by, fmt.Sprintf("%s %d", w, n))
			}
		}
		fmt.Fprintf(b, "cut by the horizon (%v) with work pending: %d", o.Horizon, r.HorizonCut)
		if len(by) > 0 {
			fmt.Fprintf(b, " (%s)", strings.Join(by, ", "))
		}
		b.WriteString("\n")
	}
}

// boundString is a bound as a story writes it (none for < 0).
func boundString(b int) string {
	if b < 0 {
		return "none"
	}
	return strconv.Itoa(b)
}

func formatBudget(m map[string]int) string {
	var parts []string
	for _, k := range sortedStrings(m) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "no faults"
	}
	return strings.Join(parts, " ")
}

// handleExplore runs the search of the block's steps after the file's
// commands so far, and prints its report. The file's own cluster is
// closed first (each schedule starts its own): commands after an explore
// block may only be other explore blocks.
//
// Example:
//
//	explore bound=2 crashes=1
//	send user=u1 room=r1 msg=hi
//	join user=u2 room=r1
func (e *Env) handleExplore(d *datadriven.TestData) (string, error) {
	if len(e.setup) == 0 {
		return "", badInput(errNoCluster)
	}
	e.Close()
	o := e.ExploreDefaults
	if e.replay != nil {
		o.Replay, o.ReplayBuild, e.replay, e.replayBuild = e.replay, e.replayBuild, nil, ""
	}
	r, err := Explore(e.setup, d, e.Mode, o)
	if err != nil {
		return "", err
	}
	e.ExploreReports = append(e.ExploreReports, r)
	return r.String(), nil
}

// ExploreFile plays a story file in mode with the explore blocks' defaults
// def (the command line's) and returns every block's report. Call it
// inside a bubble.
func ExploreFile(t testing.TB, path string, mode system.Mode, def ExploreOptions) ([]*ExploreReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ExploreText(t, path, string(data), mode, def)
}

// ExploreText is ExploreFile on a story's text (name is for errors).
func ExploreText(t testing.TB, name, text string, mode system.Mode, def ExploreOptions) ([]*ExploreReport, error) {
	e := NewEnv(mode)
	e.ExploreDefaults = def
	defer e.Close()
	defer quietly()()
	var ferr error
	datadriven.RunTestFromStringAny(t, text, func(t testing.TB, d *datadriven.TestData) string {
		if ferr != nil {
			return d.Expected
		}
		if _, err := e.Handle(d); err != nil {
			ferr = fmt.Errorf("%s: %w", filePos(name, d.Pos), err)
		}
		return d.Expected
	})
	if ferr == nil && len(e.ExploreReports) == 0 {
		ferr = fmt.Errorf("%s: no explore block", name)
	}
	return e.ExploreReports, ferr
}

// Stories are the model checker's built-in small scopes: the explore
// stories of testdata/, by name (explore-send-races-join.txt is
// "send-races-join").
//
//go:embed testdata/explore-*.txt
var stories embed.FS

// Story returns a built-in story's text.
func Story(name string) (string, error) {
	b, err := stories.ReadFile("testdata/explore-" + name + ".txt")
	if err != nil {
		return "", fmt.Errorf("no built-in story %q (stories: %s)", name, strings.Join(StoryNames(), ", "))
	}
	return string(b), nil
}

// StoryNames lists the built-in stories.
func StoryNames() []string {
	ents, _ := stories.ReadDir("testdata")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(e.Name(), "explore-"), ".txt"))
	}
	return out
}

package sim

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/relaysim/relaysim/model"
)

// The shrinker (issue 20) reduces a failing run to a smaller one that
// fails on the same property, DEMi's order: the external events first
// (the workload, then the fault plan and the per-operation fault rates),
// then the cluster, then the schedule. It makes the run explicit first
// (Config.Actions, Faults and Mix from the result: the same run, as
// TestExplicitPlanIsTheSameRun checks) and then only removes or shortens
// what that data holds, keeping a candidate when it still fails on the
// property. Every candidate runs in turn from the same starting point, so
// the same configuration shrinks to the same result (unless the time
// budget cuts it short: the run budget does not depend on the machine).
//
// This file is the driver: the options and results, running a candidate
// and keeping it, the budget, the stages' order and a run's size. The
// passes each stage runs are in shrinkpass.go.

// ShrinkOptions steer Shrink.
type ShrinkOptions struct {
	// Property is the property the shrunk run must still violate (empty:
	// the first violation's).
	Property string
	// Equiv shrinks the configuration's calm variant while its
	// equivalence check (Equivalence: every mode's calm run) still fails
	// on Property: the modes disagree, or a mode's calm run violates it
	// (empty Property: the first differential violation's, else the first
	// mode's first).
	Equiv bool
	// MaxRuns bounds the candidate runs (0: no bound).
	MaxRuns int
	// Budget bounds the wall time of the candidate runs (0: no bound). A
	// budget that runs out makes the result depend on the machine.
	Budget time.Duration
	// KeepSchedule skips the schedule stage (the first-pick schedule).
	KeepSchedule bool
	// Progress, when set, is told of every stage, every kept candidate and
	// every refused one (ShrinkProgress.Tried says why).
	Progress func(ShrinkProgress)
	// T is the test the runs belong to (nil outside tests).
	T *testing.T
	// Runner, when set, runs every run (the first, each candidate and the
	// final one) in place of Run in this process: relaysim shrink
	// -isolate's child processes, for a failure that ends the process
	// running it (goroutines left after teardown make synctest abort it).
	// It returns the run as far as the shrinker reads it (Violations, Err,
	// BubbleErr, Actions, Faults, Mix, Channels, StreamBacklog, Steps) and
	// its trace's line count, since the trace stays where the run ran.
	// Not with Equiv.
	Runner func(cfg Config) (r *Result, traceLines int)
	// extraCheck, when set, adds its violations to every run's: a test's
	// stand-in for a bug (shrink_test.go).
	extraCheck func(*model.History) []model.Violation
}

// ShrinkProgress is where a shrink is.
type ShrinkProgress struct {
	Stage   string
	Size    ShrinkSize
	Runs    int
	Elapsed time.Duration
	// Tried is set when a candidate was refused: why ("passes", the
	// other properties it violated, or its run error).
	Tried string
}

// ShrinkSize is how big a run is.
type ShrinkSize struct {
	Nodes, Users, Actions, Faults int
	// Steps are the scheduled ops (Result.Steps); TraceLines the trace's
	// lines. Under Equiv both are the first mode's run's.
	Steps, TraceLines int
}

func (s ShrinkSize) String() string {
	return fmt.Sprintf("nodes=%d users=%d actions=%d faults=%d ops=%d trace-lines=%d", s.Nodes, s.Users, s.Actions, s.Faults, s.Steps, s.TraceLines)
}

// ShrinkResult is a finished shrink.
type ShrinkResult struct {
	// Config is the shrunk run: explicit actions, faults and mix.
	Config        Config
	Property      string
	Before, After ShrinkSize
	// Runs counts the candidate runs, the check that the explicit run
	// still fails included (the first and the final run not); Elapsed is
	// the whole shrink's wall time.
	Runs    int
	Elapsed time.Duration
	// OutOfBudget says a run or time budget stopped the shrink early.
	OutOfBudget bool
	// Final is the shrunk run again, its trace kept whole; Violation is
	// its first violation of Property. Under Equiv, Final is the first
	// mode's calm run, Modes every mode's, and Violation the first
	// differential violation.
	Final     *Result
	Modes     []*Result
	Violation model.Violation
}

// ErrNoFailure is Shrink's error for a run that does not fail on a
// property.
var ErrNoFailure = errors.New("the run violates no property: nothing to shrink")

// Shrink runs cfg, then reduces it while it still violates the same
// property (ShrinkOptions.Property, or the first violation's), and runs
// the result once more keeping its trace.
func Shrink(cfg Config, opt ShrinkOptions) (*ShrinkResult, error) {
	if opt.Runner != nil && opt.Equiv {
		return nil, errors.New("a Runner runs one mode's run: not with Equiv")
	}
	s := &shrinker{opt: opt, start: time.Now()}
	cfg.KeepTrace, cfg.History = false, nil
	first, vs, err := s.run(cfg)
	if err != nil {
		return nil, err
	}
	prop := opt.Property
	if prop == "" {
		if len(vs) == 0 {
			return nil, ErrNoFailure
		}
		prop = vs[0].Property
	}
	if !hasProperty(vs, prop) {
		return nil, fmt.Errorf("the run does not violate %s", prop)
	}
	s.prop = prop
	s.cur = explicit(cfg, first)
	s.size = s.sizeOf(s.cur, first)
	before := s.size
	if !s.try("explicit", s.cur) {
		return nil, fmt.Errorf("the run made explicit (its actions, faults and mix as data) no longer violates %s", prop)
	}
	s.stages()
	final := s.cur
	final.KeepTrace = true
	last, vs, err := s.run(final)
	if err != nil {
		return nil, fmt.Errorf("the shrunk run: %w", err)
	}
	if !hasProperty(vs, prop) {
		return nil, fmt.Errorf("the shrunk run did not violate %s again (a determinism bug)", prop)
	}
	out := &ShrinkResult{Config: final, Property: prop, Before: before, After: s.sizeOf(final, last), Runs: s.runs,
		OutOfBudget: s.spent, Final: last, Modes: s.modes, Elapsed: time.Since(s.start)}
	out.Config.KeepTrace = false
	for _, v := range vs {
		if v.Property == prop {
			out.Violation = v
			break
		}
	}
	return out, nil
}

// explicit is cfg made explicit from its first run: the workload, fault
// plan and mix that run played, as data.
func explicit(cfg Config, r *Result) Config {
	cfg.Actions = slices.Clone(r.Actions)
	cfg.Faults = append([]Fault{}, r.Faults...)
	// The mix's counts only size the plan Faults now replaces: only its
	// per-operation rates are kept, so that the banner's fault line says
	// what the shrunk run injects.
	mix := r.Mix.Rates()
	cfg.Mix = &mix
	if cfg.ChannelsPerPeer == 0 {
		cfg.ChannelsPerPeer = r.Channels
	}
	if cfg.StreamBacklog == 0 {
		cfg.StreamBacklog = r.StreamBacklog
	}
	return cfg
}

type shrinker struct {
	opt   ShrinkOptions
	prop  string
	cur   Config
	size  ShrinkSize
	runs  int
	start time.Time
	spent bool
	modes []*Result
	kept  int // candidates kept
	// traceLines is the last run's trace length as the Runner reported it.
	traceLines int
}

// run runs cfg (under Equiv: its calm variant in every mode) and returns
// the run, the violations that count and an error when the run did not
// complete (which is no failure of a property).
func (s *shrinker) run(cfg Config) (*Result, []model.Violation, error) {
	if !s.opt.Equiv {
		var r *Result
		if s.opt.Runner != nil {
			r, s.traceLines = s.opt.Runner(cfg)
		} else {
			r = Run(s.opt.T, cfg)
		}
		if err := runErr(r); err != nil {
			return r, nil, err
		}
		if s.opt.extraCheck != nil && r.History != nil {
			return r, append(slices.Clip(r.Violations), s.opt.extraCheck(r.History)...), nil
		}
		return r, r.Violations, nil
	}
	runs, vs := Equivalence(s.opt.T, cfg)
	for _, r := range runs {
		if err := runErr(r); err != nil {
			return runs[0], nil, fmt.Errorf("%s: %w", r.Config.Mode, err)
		}
		// The equivalence check fails on a calm run's own violation too.
		vs = append(vs, r.Violations...)
	}
	s.modes = runs
	return runs[0], vs, nil
}

func runErr(r *Result) error {
	switch {
	case r.Err != nil:
		return r.Err
	case r.BubbleErr != nil:
		return r.BubbleErr
	}
	return nil
}

func hasProperty(vs []model.Violation, prop string) bool {
	return slices.ContainsFunc(vs, func(v model.Violation) bool { return v.Property == prop })
}

// try runs a candidate and keeps it when it fails on the property.
func (s *shrinker) try(stage string, cand Config) bool {
	if s.out() {
		return false
	}
	s.runs++
	r, vs, err := s.run(cand)
	if err != nil || !hasProperty(vs, s.prop) {
		s.refused(stage, vs, err)
		return false
	}
	s.cur, s.size = cand, s.sizeOf(cand, r)
	s.kept++
	s.report(stage)
	return true
}

// out reports whether a budget is spent.
func (s *shrinker) out() bool {
	if (s.opt.MaxRuns > 0 && s.runs >= s.opt.MaxRuns) || (s.opt.Budget > 0 && time.Since(s.start) >= s.opt.Budget) {
		s.spent = true
	}
	return s.spent
}

// refused tells Progress of a refused candidate.
func (s *shrinker) refused(stage string, vs []model.Violation, err error) {
	if s.opt.Progress == nil {
		return
	}
	why := "passes"
	switch {
	case err != nil:
		why = "run error: " + err.Error()
	case len(vs) > 0:
		why = "violates only " + model.Summarize(vs)
	}
	s.opt.Progress(ShrinkProgress{Stage: stage, Size: s.size, Runs: s.runs, Elapsed: time.Since(s.start), Tried: why})
}

func (s *shrinker) report(stage string) {
	if s.opt.Progress != nil {
		s.opt.Progress(ShrinkProgress{Stage: stage, Size: s.size, Runs: s.runs, Elapsed: time.Since(s.start)})
	}
}

// stages runs the stages in DEMi's order, but tries the first-pick
// schedule first too: the seed's random schedule is one stream of
// choices, so removing any action or fault moves every later pick and a
// timing-dependent failure goes with it, while first picks (in op key
// order) leave the interleaving of what remains as it was. When the
// failure needs the seed's schedule, the schedule stage at the end tries
// again on the shrunk run.
func (s *shrinker) stages() {
	type stage struct {
		name string
		do   func(stage string)
	}
	run := func(sts []stage) {
		for _, st := range sts {
			if s.out() {
				return
			}
			s.report(st.name)
			st.do(st.name)
		}
	}
	run([]stage{
		{"schedule", s.schedule},
		{"users", s.users},
		{"actions", s.actions},
		{"bursts", s.bursts},
	})
	kept := s.kept
	run([]stage{
		{"faults", s.faults},
		{"fault-lengths", s.faultLengths},
		{"mix", s.mix},
		{"nodes", s.nodes},
		{"channels", s.channels},
		{"duration", s.duration},
		{"schedule", s.schedule},
	})
	// Actions that only mattered with a fault, a rate, a node or a
	// schedule now gone may go too: one more pass over the workload and
	// the faults when those stages kept anything.
	if s.kept > kept && len(s.cur.Actions) > 1 {
		run([]stage{
			{"actions-again", s.actions},
			{"faults-again", s.faults},
		})
	}
}

// sizeOf measures cfg as its last run r played it.
func (s *shrinker) sizeOf(cfg Config, r *Result) ShrinkSize {
	z := sizeOf(cfg, r)
	if s.opt.Runner != nil {
		z.TraceLines = s.traceLines
	}
	return z
}

// sizeOf measures cfg as run r played it.
func sizeOf(cfg Config, r *Result) ShrinkSize {
	users := map[string]bool{}
	for _, a := range r.Actions {
		users[a.User] = true
	}
	for _, f := range r.Faults {
		if f.User != "" {
			users[f.User] = true
		}
	}
	z := ShrinkSize{Nodes: cfg.Nodes, Users: len(users), Actions: len(r.Actions), Faults: len(r.Faults), Steps: r.Steps}
	if r.Trace != nil {
		z.TraceLines = r.Trace.Lines()
	}
	return z
}

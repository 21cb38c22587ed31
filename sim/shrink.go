package sim

import (
	"errors"
	"fmt"
	"slices"
	"sort"
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
	mix := FaultMix{DropRequest: r.Mix.DropRequest, DropResponse: r.Mix.DropResponse, Duplicate: r.Mix.Duplicate,
		Delay: r.Mix.Delay, RedisError: r.Mix.RedisError, RecvBreak: r.Mix.RecvBreak}
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

// users drops whole users: their actions and the faults naming them.
func (s *shrinker) users(stage string) {
	base := s.cur
	users := usersOf(base.Actions)
	ddmin(len(users), func(keep []int) bool {
		if len(keep) == 0 {
			return false
		}
		kept := map[string]bool{}
		for _, i := range keep {
			kept[users[i]] = true
		}
		c := base
		c.Actions = filter(c.Actions, func(a Action) bool { return kept[a.User] })
		c.Faults = filter(c.Faults, func(f Fault) bool { return f.User == "" || kept[f.User] })
		return s.try(stage, c)
	}, s.out)
}

// actions drops chunks of actions, then single ones. At least one is
// kept: an empty Config.Actions means the generated workload.
func (s *shrinker) actions(stage string) {
	base := s.cur
	ddmin(len(base.Actions), func(keep []int) bool {
		if len(keep) == 0 {
			return false
		}
		c := base
		c.Actions = pick(base.Actions, keep)
		return s.try(stage, c)
	}, s.out)
}

// bursts shortens what lasts: slow reads (each For halved, once) and
// padded payloads (unpadded).
func (s *shrinker) bursts(stage string) {
	for i, a := range s.cur.Actions {
		if a.Kind == ActSlow && a.For > time.Millisecond {
			c := s.cur
			c.Actions = slices.Clone(c.Actions)
			c.Actions[i].For = a.For / 2
			s.try(stage, c)
		}
	}
	if slices.ContainsFunc(s.cur.Actions, func(a Action) bool { return a.Size > 0 }) {
		c := s.cur
		c.Actions = slices.Clone(c.Actions)
		for i := range c.Actions {
			c.Actions[i].Size = 0
		}
		s.try(stage, c)
	}
}

// faults drops timed faults, a crash with its restart, a partition with
// its heal and a blip with its end.
func (s *shrinker) faults(stage string) {
	groups := faultGroups(s.cur.Faults)
	base := s.cur
	ddmin(len(groups), func(keep []int) bool {
		c := base
		c.Faults = []Fault{}
		for _, g := range keep {
			for _, i := range groups[g] {
				c.Faults = append(c.Faults, base.Faults[i])
			}
		}
		sortFaults(c.Faults)
		return s.try(stage, c)
	}, s.out)
}

// faultLengths halves each fault's span while it still fails (at most
// three times; a paired fault's end moves with it).
func (s *shrinker) faultLengths(stage string) {
	for g := 0; g < len(faultGroups(s.cur.Faults)); g++ {
		for range 3 {
			groups := faultGroups(s.cur.Faults)
			if g >= len(groups) {
				return
			}
			head := s.cur.Faults[groups[g][0]]
			if head.For <= time.Millisecond {
				break
			}
			c := s.cur
			c.Faults = slices.Clone(c.Faults)
			d := (head.For / 2).Truncate(time.Millisecond)
			c.Faults[groups[g][0]].For = d
			if len(groups[g]) == 2 {
				c.Faults[groups[g][1]].At = head.At + d
			}
			sortFaults(c.Faults)
			if !s.try(stage, c) {
				break
			}
		}
	}
}

// mix turns each per-operation fault rate off in turn.
func (s *shrinker) mix(stage string) {
	rates := []func(*FaultMix) *float64{
		func(m *FaultMix) *float64 { return &m.DropRequest },
		func(m *FaultMix) *float64 { return &m.DropResponse },
		func(m *FaultMix) *float64 { return &m.Duplicate },
		func(m *FaultMix) *float64 { return &m.Delay },
		func(m *FaultMix) *float64 { return &m.RedisError },
		func(m *FaultMix) *float64 { return &m.RecvBreak },
	}
	for _, rate := range rates {
		if s.cur.Mix == nil || *rate(s.cur.Mix) == 0 {
			continue
		}
		m := *s.cur.Mix
		*rate(&m) = 0
		c := s.cur
		c.Mix = &m
		s.try(stage, c)
	}
}

// nodes tries the smallest cluster first: what names a removed node
// names node Node mod n instead; a partition or blip whose two sides
// become one node is dropped with its end.
func (s *shrinker) nodes(stage string) {
	for n := 1; n < s.cur.Nodes; n++ {
		if s.try(stage, onNodes(s.cur, n)) {
			return
		}
	}
}

func onNodes(c Config, n int) Config {
	c.Nodes = n
	c.Actions = slices.Clone(c.Actions)
	for i := range c.Actions {
		c.Actions[i].Node %= n
	}
	fs := []Fault{}
	for _, g := range faultGroups(c.Faults) {
		var kept []Fault
		for _, i := range g {
			f := c.Faults[i]
			f.Node %= n
			if f.Peer > 0 {
				f.Peer %= n
			}
			f.Forge.Node %= n
			f.Steal.Node %= n
			if (f.Kind == model.FaultPartition || f.Kind == model.FaultHeal || f.Kind == model.FaultBlip) && f.Peer == f.Node {
				kept = nil
				break
			}
			kept = append(kept, f)
		}
		fs = append(fs, kept...)
	}
	sortFaults(fs)
	c.Faults = fs
	if len(c.Versions) > n {
		c.Versions = c.Versions[:n]
	}
	return c
}

// channels tries one gRPC connection per peer.
func (s *shrinker) channels(stage string) {
	if s.cur.ChannelsPerPeer != 1 {
		c := s.cur
		c.ChannelsPerPeer = 1
		s.try(stage, c)
	}
}

// duration ends the load phase just after the last action and the last
// fault's end, to the next second (the drain is kept: liveness is judged
// after it, as before).
func (s *shrinker) duration(stage string) {
	var end time.Duration
	for _, a := range s.cur.Actions {
		end = max(end, a.At+a.For)
	}
	for _, f := range s.cur.Faults {
		end = max(end, f.At+f.For)
	}
	end = (end + time.Second).Truncate(time.Second)
	if end < s.cur.Duration {
		c := s.cur
		c.Duration = end
		s.try(stage, c)
	}
}

// schedule tries the first-pick schedule (scheduler "first"): every
// ready op in key order, none delayed.
func (s *shrinker) schedule(stage string) {
	if s.opt.KeepSchedule || s.cur.Scheduler == "first" || s.cur.Scheduler == "exhaustive" || s.cur.Chooser != nil {
		return
	}
	c := s.cur
	c.Scheduler = "first"
	s.try(stage, c)
}

// faultGroups groups the indices of fs: a crash with its restart, a
// partition with its heal and a blip with its end; every other fault
// alone. Groups are in the order of their first fault.
func faultGroups(fs []Fault) [][]int {
	used := make([]bool, len(fs))
	var out [][]int
	for i, f := range fs {
		if used[i] {
			continue
		}
		used[i] = true
		g := []int{i}
		if end := endKind(f); end != "" {
			for j := i + 1; j < len(fs); j++ {
				e := fs[j]
				if !used[j] && e.Kind == end && e.Node == f.Node && (end == model.FaultRestart || e.Peer == f.Peer) &&
					(f.Kind != model.FaultBlip || e.End) && e.At == f.At+f.For {
					used[j] = true
					g = append(g, j)
					break
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// endKind is the kind of the fault that ends f ("": none of its own).
func endKind(f Fault) model.FaultKind {
	switch {
	case f.Kind == model.FaultCrash:
		return model.FaultRestart
	case f.Kind == model.FaultPartition:
		return model.FaultHeal
	case f.Kind == model.FaultBlip && !f.End:
		return model.FaultBlip
	}
	return ""
}

func sortFaults(fs []Fault) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
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

func filter[T any](xs []T, keep func(T) bool) []T {
	out := []T{}
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func pick[T any](xs []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, xs[i])
	}
	return out
}

// ddmin is Zeller's delta debugging, complements only: it cuts n items
// into chunks, tries keeping all but one chunk, keeps the first such
// complement that still fails (test says so; test keeps what it passes as
// its new current set) and otherwise halves the chunks, down to single
// items. keep lists the kept items' indices, ascending. stop ends it early.
func ddmin(n int, test func(keep []int) bool, stop func() bool) {
	cur := make([]int, n)
	for i := range cur {
		cur[i] = i
	}
	k := 2
	for len(cur) >= 2 && !stop() {
		k = min(k, len(cur))
		size := (len(cur) + k - 1) / k
		cut := false
		for start := 0; start < len(cur) && !stop(); start += size {
			rest := append(slices.Clone(cur[:start]), cur[min(start+size, len(cur)):]...)
			if test(rest) {
				cur, cut = rest, true
				k = max(k-1, 2)
				break
			}
		}
		if cut {
			continue
		}
		if k >= len(cur) {
			return
		}
		k = min(2*k, len(cur))
	}
	if len(cur) == 1 && !stop() {
		test(nil) // the last item too (test refuses what cannot be empty)
	}
}

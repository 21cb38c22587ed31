package scenarios

import (
	"fmt"
	"maps"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// Iterative bounding and the PCT fallback of a story's search
// (docs/model-checking.md, "Iterating the bound" and "When a search
// cannot finish").

// exploreIterate runs the search at bound 0, 1, ... (dst.IterateBounds)
// and sums the bounds' reports into one (ExploreReport.Iteration says
// how). o.Limit is the iteration's: each bound gets what the ones before
// it left.
func exploreIterate(setup []*datadriven.TestData, steps []exploreStep, mode system.Mode, o ExploreOptions) (*ExploreReport, error) {
	var bounds []*ExploreReport
	var ferr error
	it := dst.IterateBounds(o.Bound, o.Limit, func(bound, limit int) dst.BoundRun {
		ob := o
		ob.Bound, ob.Limit = bound, limit
		r, err := exploreSearch(setup, steps, mode, ob)
		if err != nil {
			ferr = err
			return dst.BoundRun{StoppedBy: "error"}
		}
		bounds = append(bounds, r)
		return dst.BoundRun{Schedules: r.Schedules, Violations: r.Failing, Exhausted: r.Exhausted, StoppedBy: r.StoppedBy, Refused: r.BoundHit + r.BoundHeld}
	})
	if ferr != nil {
		return nil, ferr
	}
	sum := &ExploreReport{Mode: mode, Opts: o, Terminal: map[string]bool{}, Unknown: map[string]int{}, Probes: map[string]int{},
		Overridden: o.Overridden, Iteration: &it, Bounds: bounds, Exhausted: true}
	for _, r := range bounds {
		sum.Schedules += r.Schedules
		sum.Blocked += r.Blocked
		sum.MaxDepth = max(sum.MaxDepth, r.MaxDepth)
		maps.Copy(sum.Terminal, r.Terminal)
		for k, v := range r.Probes {
			sum.Probes[k] += v
		}
		for k, v := range r.Unknown {
			sum.Unknown[k] += v
		}
		if sum.FirstViolation == 0 && r.FirstViolation > 0 {
			sum.FirstViolation = sum.Schedules - r.Schedules + r.FirstViolation
		}
		sum.Failing += r.Failing
		sum.Faults += r.Faults
		for _, v := range r.Violations {
			if len(sum.Violations) < maxViolations {
				sum.Violations = append(sum.Violations, v)
			}
		}
		sum.Exhausted = sum.Exhausted && r.Exhausted
	}
	if len(bounds) > 0 {
		last := bounds[len(bounds)-1]
		sum.firstDepth = bounds[0].firstDepth
		sum.BoundHit, sum.BoundHeld, sum.BudgetHit, sum.DepthHit, sum.BudgetHitBy = last.BoundHit, last.BoundHeld, last.BudgetHit, last.DepthHit, last.BudgetHitBy
		sum.HorizonCut, sum.HorizonCutBy, sum.StoppedBy = last.HorizonCut, last.HorizonCutBy, last.StoppedBy
	}
	if len(bounds) < len(it.Runs) { // the budget was spent before the last bound ran
		sum.Exhausted, sum.StoppedBy = false, it.Runs[len(it.Runs)-1].StoppedBy
	}
	return sum, nil
}

// exploreSample is the fallback of a search r that could not finish:
// o.Sample schedules drawn by a PCT sampler (dst.Sampler) over the same
// choices, faults and budgets, and horizon. Its budget is schedules, never
// time: with the same flags it draws the same schedules, whenever the
// search before it was stopped. A failing schedule is kept like the
// search's (its schedule replays it).
func exploreSample(setup []*datadriven.TestData, steps []exploreStep, mode system.Mode, o ExploreOptions, r *ExploreReport) error {
	ex := dst.NewExplorer(false, -1, o.Budget)
	s := dst.NewSampler(o.SampleSeed, o.SampleDepth)
	s.Steps = r.firstDepth
	ex.Sample = s
	rep := &SampleReport{Fallback: dst.Fallback{StoppedAt: r.Schedules, Depth: o.SampleDepth, Seed: o.SampleSeed}}
	seen := map[string]bool{}
	for range o.Sample {
		one, err := exploreRun(setup, steps, mode, o, ex)
		if err != nil {
			return fmt.Errorf("PCT fallback, schedule %d: %w", ex.Schedules, err)
		}
		if ex.Divergence != nil { // no prefix to follow: cannot happen
			return fmt.Errorf("PCT fallback, schedule %d: %w", ex.Schedules, ex.Divergence)
		}
		if !seen[one.out] {
			seen[one.out] = true
			rep.Terminal++
			if !r.Terminal[one.out] {
				rep.New++
			}
		}
		for name := range one.probes {
			r.Probes[name]++
		}
		for why, n := range one.unknown {
			r.Unknown[why] += n
		}
		if one.faulted {
			rep.Faults++
		}
		if len(one.vs) > 0 {
			rep.Fallback.Violations++
			r.Failing++
			if r.FirstViolation == 0 {
				r.FirstViolation = r.Schedules + ex.Schedules
			}
			if len(r.Violations) < maxViolations {
				v := ExploreViolation{Schedule: ex.Schedule(), Violations: one.vs, Trace: one.trace.Tail(80), History: one.h}
				if v.Whole, err = wholeTrace(setup, steps, mode, o, v.Schedule, one.trace.Hash()); err != nil {
					return err
				}
				r.Violations = append(r.Violations, v)
			}
		}
		ex.Next()
		rep.Fallback.Sampled++
	}
	r.Sampled = rep
	return nil
}

// iteratedString is an iterated search's report: a line per bound, the
// iteration's verdict, then the sums.
func (r *ExploreReport) iteratedString(b *strings.Builder) {
	o := r.Opts
	fmt.Fprintf(b, "bound=iterated 0..%s budgets: %s\n", boundString(o.Bound), formatBudget(o.Budget))
	if len(r.Overridden) > 0 {
		fmt.Fprintf(b, "the command line overrides the story's %s\n", strings.Join(r.Overridden, ", "))
	}
	for _, br := range r.Bounds {
		fmt.Fprintf(b, "bound %d: schedules %d (redundant %d), terminal states %d, max depth %d, cut by the bound %d, by the budgets %d",
			br.Opts.Bound, br.Schedules, br.Blocked, len(br.Terminal), br.MaxDepth, br.BoundHit, br.BudgetHit)
		if br.BoundHeld > 0 {
			fmt.Fprintf(b, ", runs held by the bound %d", br.BoundHeld)
		}
		if br.HorizonCut > 0 {
			fmt.Fprintf(b, ", by the horizon %d", br.HorizonCut)
		}
		if br.DepthHit > 0 {
			fmt.Fprintf(b, ", by the depth budget %d", br.DepthHit)
		}
		if br.StoppedBy != "" {
			fmt.Fprintf(b, ", stopped by %s", br.StoppedBy)
		}
		fmt.Fprintf(b, ", exhausted: %s, violations: %d\n", map[bool]string{true: "yes", false: "no"}[br.Exhausted], br.Failing)
	}
	if n := len(r.Iteration.Runs); n > len(r.Bounds) {
		fmt.Fprintf(b, "bound %d: not run, the schedule limit (%d) was spent\n", r.Iteration.Runs[n-1].Bound, o.Limit)
	}
	fmt.Fprintf(b, "%s\n", r.Iteration.Summary())
	fmt.Fprintf(b, "schedules over the bounds: %d (a bound runs again what the bounds below it ran), terminal states: %d, max depth: %d\n",
		r.Schedules, len(r.Terminal), r.MaxDepth)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaysim/relaysim/internal/proc"
	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/timeline"
)

// cmdExplore is the model checker on the command line: every schedule of
// a small story's explore block, in each mode asked, within the bound and
// the fault budgets (docs/model-checking.md).
func cmdExplore(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("explore")
	scenario := fs.String("scenario", "", "the story file: its setup commands, then its explore block")
	story := fs.String("story", "", "a built-in story instead of a file ("+strings.Join(scenarios.StoryNames(), ", ")+")")
	modes := fs.String("mode", "all", "relay mode: single, bulk, stream or all")
	bound := fs.String("bound", "none", "the preemption bound: a number, or none (given, it wins over a story's own bound=)")
	budgetFlag := map[string]*int{}
	for _, b := range sim.ExploreBudgets {
		budgetFlag[b.Class] = fs.Int(b.Arg, 0, b.Usage+" (given, it wins over the story's own "+b.Arg+"=)")
	}
	horizon := fs.Duration("horizon", 3*time.Second, "the explored window: virtual time from the steps")
	drain := fs.Duration("drain", 2*time.Second, "the liveness phase after the horizon")
	limit := fs.Int("limit", 0, "stop after this many schedules per search (0: no limit; the search then says exhausted=no)")
	depth := fs.Int("depth", 0, "a depth budget: explore no alternative deeper than this many choices (0: none; exhausted=no when hit)")
	budget := fs.Duration("time", 0, "stop each search after this much wall time (0: none; exhausted=no when hit)")
	reduce := fs.Bool("reduce", true, "partial-order reduction (DPOR with sleep sets); false runs the naive search")
	schedule := fs.String("schedule", "", "replay this schedule file (one op key per line) instead of searching")
	out := fs.String("out", ".", "where a violation's schedule file is written")
	junit := fs.String("junit", "", "write a JUnit XML file: one case per search")
	shardFlag := fs.String("shard", "", "run only the searches i of n (i/n, from 1): modes and blocks are split between shards")
	tl := fs.String("timeline", "", "write the first violation's timeline (one self-contained HTML page) to this file")
	jobs := fs.Int("j", 1, "searches in parallel (worker processes, each a -shard); one search is never split")
	fs.String("mutant", "", mutantFlagUsage) // taken out before parsing: main.go, mutant.go
	fs.String("cover", "", coverFlagUsage)   // taken out before parsing: main.go, cover.go
	first := fs.Bool("first", false, "stop each search at its first violation (the search then says exhausted=no)")
	iterate := fs.Bool("iterate", false, "iterate the bound: search at bound 0, 1, ... up to -bound (or the story's bound=; none: until a bound refuses nothing), stopping at the first bound with a violation; -limit is then the whole iteration's")
	pct := fs.Int("pct", 0, "when a search is stopped by -limit or -time, draw this many more schedules with PCT (0: none); its budget is schedules, so its draws are the same every time")
	pctDepth := fs.Int("pct-depth", 3, "priority change points of each -pct schedule")
	pctSeed := fs.String("seed", "0x2a", "the -pct sampler's seed, hex (0x2a) or decimal")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "explore", err)
	}
	bad := func(format string, v ...any) int {
		return usageError(stderr, "explore", fmt.Errorf(format, v...))
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	name, text := *scenario, ""
	switch {
	case *scenario != "" && *story != "":
		return bad("-scenario and -story: give one")
	case *scenario != "":
		b, err := os.ReadFile(*scenario)
		if err != nil {
			return bad("%v", err)
		}
		text = string(b)
	default:
		if *story == "" {
			*story = "send-races-join"
		}
		t, err := scenarios.Story(*story)
		if err != nil {
			return bad("-story %s: %v", *story, err)
		}
		name, text = "story:"+*story, t
	}
	var ms []system.Mode
	switch *modes {
	case "all":
		ms = system.Modes
	default:
		m, err := system.ParseMode(*modes)
		if err != nil {
			return bad("-mode %s: want single, bulk, stream or all", *modes)
		}
		ms = []system.Mode{m}
	}
	def := scenarios.DefaultExploreOptions()
	if *bound != "none" {
		b, err := strconv.Atoi(*bound)
		if err != nil || b < 0 {
			return bad("-bound %s: want a number of preemptions, or none", *bound)
		}
		def.Bound = b
	}
	def.Budget = map[string]int{}
	for cls, v := range budgetFlag {
		def.Budget[cls] = *v
	}
	def.Horizon, def.Drain, def.Limit, def.Reduce, def.Depth = *horizon, *drain, *limit, *reduce, *depth
	def.Iterate, def.Sample, def.SampleDepth = *iterate, *pct, *pctDepth
	if *pct < 0 || *pctDepth < 0 {
		return bad("-pct %d -pct-depth %d: want counts (0 or more)", *pct, *pctDepth)
	}
	seed, err := dst.ParseSeed(*pctSeed)
	if err != nil {
		return bad("-seed: %v", err)
	}
	def.SampleSeed = seed
	// A flag given on the command line wins over a story's own argument
	// of the same name (the report says which it overrode).
	def.Fixed = map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(storyArgs(), f.Name) {
			def.Fixed[f.Name] = true
		}
	})
	if *schedule != "" {
		if *iterate || *pct > 0 {
			return bad("-schedule replays one schedule: -iterate and -pct search")
		}
		if len(ms) != 1 {
			return bad("-schedule replays one mode: give -mode")
		}
		b, err := os.ReadFile(*schedule)
		if err != nil {
			return bad("%v", err)
		}
		if def.Replay, err = dst.ParseSchedule(string(b)); err != nil {
			return bad("%s: %v", *schedule, err)
		}
		def.ReplayBuild = dst.ScheduleBuild(string(b))
	}
	if err := checkOutputs(output{flag: "out", path: *out, dir: true}, output{flag: "junit", path: *junit}, output{flag: "timeline", path: *tl}); err != nil {
		return bad("%v", err)
	}
	sh := shard{I: 1, N: 1}
	if *shardFlag != "" {
		var err error
		if sh, err = parseShard(*shardFlag); err != nil {
			return bad("-shard %s: %v", *shardFlag, err)
		}
	}
	if *jobs > 1 {
		if *shardFlag != "" {
			return bad("-j and -shard: give one (-j runs its own shards)")
		}
		return exploreParallel(args, *jobs, stdout, stderr)
	}
	// A search is sequential (one schedule at a time, one operation at a
	// time): a second P buys only threads waking each other. One P took a
	// third less CPU per schedule and no more wall time (BENCHMARKS.md,
	// "The model checker"). A GOMAXPROCS the caller set is kept.
	if os.Getenv("GOMAXPROCS") == "" {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	tty := stderrIsTerminal(stderr)
	var st status // for the heartbeat off a terminal
	st.set("starting " + name)
	defer startHeartbeat(stderr, heartbeatEvery, "explore", &st)()
	// The bubble's clock is virtual: the wall clock for -time is read by
	// a goroutine outside it.
	wall := startWallClock()
	defer wall.stop()
	var all []*scenarios.ExploreReport
	var herr error
	job := 0
	err = dst.Bubble(nil, func(t *testing.T) {
		for _, m := range ms {
			job++
			if (job-1)%sh.N != sh.I-1 {
				continue
			}
			o := def
			start := wall.now()
			o.Stop = func(r *scenarios.ExploreReport) bool {
				rate := float64(r.Schedules) / max(wall.now()-start, time.Millisecond).Seconds()
				line := fmt.Sprintf("%s %s: %d schedules (%.0f/s), %d terminal states, depth %d, %d violations", name, m, r.Schedules, rate, len(r.Terminal), r.MaxDepth, len(r.Violations))
				if tty {
					fmt.Fprintf(stderr, "\r%s   ", line)
				} else {
					st.set(line)
				}
				switch {
				case *first && len(r.Violations) > 0:
					r.StoppedBy = "first"
				case *budget > 0 && wall.now()-start >= *budget:
					r.StoppedBy = "time"
				default:
					return false
				}
				return true
			}
			rs, err := scenarios.ExploreText(t, name, text, m, o)
			if tty {
				fmt.Fprint(stderr, "\r\033[K")
			}
			if ierr := (*scenarios.InputError)(nil); errors.As(err, &ierr) {
				herr = err
				return
			}
			if err != nil {
				herr = fmt.Errorf("%s mode %s: %w", name, m, err)
				return
			}
			all = append(all, rs...)
		}
	})
	if herr == nil && err != nil {
		herr = err
	}
	if ierr := (*scenarios.InputError)(nil); errors.As(herr, &ierr) {
		// A file that cannot be read as written: one line naming its
		// line (the same in every mode).
		fmt.Fprintf(stderr, "relaysim explore: %v\n", herr)
		return exitUsage
	}
	if herr != nil {
		fmt.Fprintf(stderr, "relaysim explore: %v\n", herr)
		writeExploreSummary(stdout, exploreJSON{runSummary: runSummary{
			Summary: classHarness, Exit: exitHarness, Command: "explore", Mode: *modes, Violations: []string{}, Error: herr.Error(),
		}, Terminal: map[string]int{}, Searches: []searchJSON{}, Probes: map[string]int{}})
		return exitHarness
	}
	// firstAt counts the schedules run until the first violation, over
	// every search in order, the PCT fallback's included (0: none).
	firstAt, done := 0, 0
	for _, r := range all {
		if firstAt == 0 && r.FirstViolation > 0 {
			firstAt = done + r.FirstViolation
		}
		done += r.Schedules
		if r.Sampled != nil {
			done += r.Sampled.Fallback.Sampled
		}
	}
	return exploreVerdict(all, name, *scenario, *story, fs, *out, *junit, *tl, *modes, firstAt, stdout, stderr)
}

// exploreJSON is the JSON line `explore` prints just before its last
// line: run's summary line (runSummary: the class, the exit code, the
// violated properties, the first failing schedule's replay command) with
// the search's counts, so that tooling (the mutant catalog's explore
// suite, mutants.Summary) never scrapes the report, e.g.
//
//	{"summary":"violation","exit":1,"command":"explore","seed":"","mode":"bulk","violations":["no-loss"],"trace_hash":"","replay":"relaysim explore ...","schedules":120,"terminal":{"bulk":6},"searches":[{"search":"bulk","bound":"1","budgets":{"drop":1},"horizon":"3s","schedules":120,"terminal":6,"max_depth":30,"exhausted":true,"cut":{"bound":40,"budgets":{"drop":3},"depth":0,"horizon":0},"probes":{"session.gap-in-known-room":60}}],"probes":{"session.gap-in-known-room":60},"exhausted":true,"first_violation":17}
//
// FirstViolation is how many schedules ran, over the searches in order,
// until the first that broke a property (0: none did); with -j, the
// first failing worker's own count. Failing counts the failing schedules
// (the last line's violations=).
type exploreJSON struct {
	runSummary
	Schedules int `json:"schedules"`
	// Terminal is the distinct terminal states of each search, by its
	// label (searchLabel: the mode, with the block's number when a file
	// has several): never summed across modes, whose states differ.
	Terminal map[string]int `json:"terminal"`
	// Searches says, per search, its bound, its budgets and what each cut.
	Searches []searchJSON `json:"searches"`
	// Probes is the union of the searches' code probes: per probe, the
	// schedules that hit it over every search (a user sees whether the
	// story reached the code they changed).
	Probes         map[string]int `json:"probes"`
	Exhausted      bool           `json:"exhausted"`
	FirstViolation int            `json:"first_violation"`
	Failing        int            `json:"failing,omitempty"`
	// FootprintsUnknown counts the Redis ops the footprint classifier
	// could not show and took to touch everything (sound, slower).
	FootprintsUnknown int `json:"footprints_unknown,omitempty"`
}

// searchJSON is one search (a story's block in one mode) in the summary
// line: its settings, its size and what cut it. Budgets and cuts are per
// fault class (crash, drop, lose, error, delay); a cut counts choices
// left out, each a subtree of schedules that did not run, except horizon,
// which counts schedules the horizon closed on with work pending.
type searchJSON struct {
	Search     string         `json:"search"`
	Bound      string         `json:"bound"`
	Budgets    map[string]int `json:"budgets"`
	Horizon    string         `json:"horizon"`
	Depth      int            `json:"depth,omitempty"`
	Limit      int            `json:"limit,omitempty"`
	Schedules  int            `json:"schedules"`
	Terminal   int            `json:"terminal"`
	MaxDepth   int            `json:"max_depth"`
	Exhausted  bool           `json:"exhausted"`
	Cut        cutJSON        `json:"cut"`
	StoppedBy  string         `json:"stopped_by,omitempty"`
	Overridden []string       `json:"overridden,omitempty"`
	// Probes counts, per code probe the search hit, its schedules that
	// hit it.
	Probes map[string]int `json:"probes"`
	// Bounds is an iterated search's (-iterate) bounds, in order;
	// SmallestViolatingBound the smallest with a violation (absent: none)
	// and IterationEnd why the iteration ended (violation, top,
	// saturated, stopped). The search's schedules, terminal states and
	// probes are then over every bound, its cut the last bound's.
	Bounds                 []boundJSON `json:"bounds,omitempty"`
	SmallestViolatingBound *int        `json:"smallest_violating_bound,omitempty"`
	IterationEnd           string      `json:"iteration_end,omitempty"`
	// Fallback is the PCT schedules drawn after the search was stopped
	// (-pct): not counted in Schedules.
	Fallback *fallbackJSON `json:"fallback,omitempty"`
}

// boundJSON is one bound of an iterated search.
type boundJSON struct {
	Bound     int     `json:"bound"`
	Schedules int     `json:"schedules"`
	Terminal  int     `json:"terminal"`
	MaxDepth  int     `json:"max_depth"`
	Exhausted bool    `json:"exhausted"`
	Failing   int     `json:"failing"`
	Cut       cutJSON `json:"cut"`
	// Held counts the runs the bound held to the chain (its other
	// refusal): with cut.bound zero too, a higher bound adds nothing.
	Held      int    `json:"held,omitempty"`
	StoppedBy string `json:"stopped_by,omitempty"`
}

// fallbackJSON is the PCT fallback of a search that could not finish.
type fallbackJSON struct {
	Method    string `json:"method"` // "pct"
	Depth     int    `json:"depth"`
	Seed      string `json:"seed"`
	StoppedAt int    `json:"stopped_at"` // the search's schedules before it
	Schedules int    `json:"schedules"`
	Failing   int    `json:"failing"`
	Terminal  int    `json:"terminal"`
	New       int    `json:"new"`    // terminal states the search had not reached
	Faults    int    `json:"faults"` // schedules that chose a fault
}

type cutJSON struct {
	Bound   int            `json:"bound"`
	Budgets map[string]int `json:"budgets"`
	Depth   int            `json:"depth"`
	Horizon int            `json:"horizon"`
	// HorizonBy counts the horizon's schedules per work pending
	// (ops_parked, calls_in_flight, relay_timers); one may count under
	// several.
	HorizonBy map[string]int `json:"horizon_by,omitempty"`
}

// searchLabel names the i-th report of all in the summary: its mode,
// and "#k" for the k-th block of a file with several.
func searchLabel(all []*scenarios.ExploreReport, i int) string {
	r, k, n := all[i], 0, 0
	for j, o := range all {
		if o.Mode == r.Mode {
			n++
			if j <= i {
				k++
			}
		}
	}
	if n > 1 {
		return fmt.Sprintf("%s#%d", r.Mode, k)
	}
	return string(r.Mode)
}

func searchOf(label string, r *scenarios.ExploreReport) searchJSON {
	o := r.Opts
	bound := "none"
	if o.Bound >= 0 {
		bound = strconv.Itoa(o.Bound)
	}
	budgets := map[string]int{}
	for k, v := range o.Budget {
		if v > 0 {
			budgets[k] = v
		}
	}
	s := searchJSON{Search: label, Bound: bound, Budgets: budgets, Horizon: o.Horizon.String(), Depth: o.Depth, Limit: o.Limit,
		Schedules: r.Schedules, Terminal: len(r.Terminal), MaxDepth: r.MaxDepth, Exhausted: r.Exhausted,
		Cut: cutOf(r), StoppedBy: r.StoppedBy, Overridden: r.Overridden,
		Probes: maps.Collect(maps.All(r.Probes))}
	if it := r.Iteration; it != nil {
		s.Bound = "0.." + bound
		s.Bounds = []boundJSON{}
		for _, b := range r.Bounds {
			s.Bounds = append(s.Bounds, boundJSON{Bound: b.Opts.Bound, Schedules: b.Schedules, Terminal: len(b.Terminal), MaxDepth: b.MaxDepth,
				Exhausted: b.Exhausted, Failing: b.Failing, Cut: cutOf(b), Held: b.BoundHeld, StoppedBy: b.StoppedBy})
		}
		if n := len(it.Runs); n > len(r.Bounds) { // the limit was spent before it ran
			s.Bounds = append(s.Bounds, boundJSON{Bound: it.Runs[n-1].Bound, Cut: cutJSON{Budgets: map[string]int{}}, StoppedBy: it.Runs[n-1].StoppedBy})
		}
		if it.Smallest >= 0 {
			s.SmallestViolatingBound = &it.Smallest
		}
		s.IterationEnd = it.End
	}
	if sr := r.Sampled; sr != nil {
		f := sr.Fallback
		s.Fallback = &fallbackJSON{Method: "pct", Depth: f.Depth, Seed: f.Seed.String(), StoppedAt: f.StoppedAt, Schedules: f.Sampled,
			Failing: f.Violations, Terminal: sr.Terminal, New: sr.New, Faults: sr.Faults}
	}
	return s
}

// cutOf is what cut a search (a bound's, in an iterated one).
func cutOf(r *scenarios.ExploreReport) cutJSON {
	cut := map[string]int{}
	for k, v := range r.BudgetHitBy {
		cut[k] = v
	}
	var horizonBy map[string]int
	for k, v := range r.HorizonCutBy {
		if horizonBy == nil {
			horizonBy = map[string]int{}
		}
		horizonBy[strings.ReplaceAll(k, " ", "_")] = v
	}
	return cutJSON{Bound: r.BoundHit, Budgets: cut, Depth: r.DepthHit, Horizon: r.HorizonCut, HorizonBy: horizonBy}
}

func writeExploreSummary(w io.Writer, s exploreJSON) {
	js, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("explore summary line: %v", err)) // plain values: cannot fail
	}
	fmt.Fprintf(w, "%s\n", js)
	noteSummary(js)
}

// exploreLastLine is the line a search ends with.
// Terminal states are per search (never summed across modes), in the
// searches' order.
func exploreLastLine(s exploreJSON) string {
	var ts []string
	for _, sr := range s.Searches {
		ts = append(ts, fmt.Sprintf("%s=%d", sr.Search, s.Terminal[sr.Search]))
	}
	if len(ts) == 0 {
		ts = []string{"none"}
	}
	return fmt.Sprintf("explore: %d schedules, terminal states %s, exhausted=%s, violations=%d",
		s.Schedules, strings.Join(ts, " "), map[bool]string{true: "yes", false: "no"}[s.Exhausted], s.Failing)
}

// wallClock is real elapsed time for code inside a bubble, whose own
// clock is virtual: a goroutine outside the bubble keeps it (to 10 ms).
type wallClock struct {
	elapsed atomic.Int64
	done    chan struct{}
}

func startWallClock() *wallClock {
	w := &wallClock{done: make(chan struct{})}
	start := time.Now()
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				w.elapsed.Store(int64(time.Since(start)))
			}
		}
	}()
	return w
}

func (w *wallClock) now() time.Duration { return time.Duration(w.elapsed.Load()) }
func (w *wallClock) stop()              { close(w.done) }

// exploreVerdict prints every search's report, writes the failing
// schedules and the JUnit file, and ends with the summary line.
func exploreVerdict(all []*scenarios.ExploreReport, name, scenario, story string, fs *flag.FlagSet, outDir, junit, tl, modes string, firstAt int, stdout, stderr io.Writer) int {
	var schedules, violations, unknown int
	terminal, searches, probes := map[string]int{}, []searchJSON{}, map[string]int{}
	props, evidence := []string{}, []string(nil)
	firstReplay := ""
	exhausted := len(all) > 0
	var cases []junitCase
	for i, r := range all {
		fmt.Fprintf(stdout, "== %s mode=%s\n%s", name, r.Mode, r)
		schedules += r.Schedules
		if r.Sampled != nil {
			schedules += r.Sampled.Fallback.Sampled
		}
		label := searchLabel(all, i)
		terminal[label] = len(r.Terminal)
		searches = append(searches, searchOf(label, r))
		for name, n := range r.Probes {
			probes[name] += n
		}
		violations += max(r.Failing, len(r.Violations))
		exhausted = exhausted && r.Exhausted
		for _, n := range r.Unknown {
			unknown += n
		}
		jc := junitCase{Name: fmt.Sprintf("%s %s #%d", name, r.Mode, i+1), Classname: "relaysim.explore"}
		for k, v := range r.Violations {
			file := filepath.Join(outDir, fmt.Sprintf("explore-%s-%s-%d.schedule", sanitize(name), r.Mode, k+1))
			if f := fs.Lookup("schedule"); f != nil && f.Value.String() != "" {
				file = f.Value.String() // a replay names the schedule it ran: no copy
			} else {
				err := os.MkdirAll(outDir, 0o755)
				if err == nil {
					err = os.WriteFile(file, []byte(dst.FormatScheduleOn(v.Schedule, sim.SourceBuild())), 0o644)
				}
				if err != nil {
					fmt.Fprintf(stderr, "relaysim explore: %v\n", err)
				}
			}
			src := "-scenario " + scenario
			if scenario == "" {
				src = "-story " + story
			}
			replay := fmt.Sprintf("%s relaysim explore %s -mode %s%s -schedule %s", goRun(), src, r.Mode, budgetFlags(fs), file)
			fmt.Fprint(stdout, "\n"+exploreBanner(name, r, k, v, file, replay))
			evidence = violatedLines(evidence, sim.BannerViolations(v.Violations, 10))
			for _, p := range propertiesOf(v.Violations) {
				if !slices.Contains(props, p) {
					props = append(props, p)
				}
			}
			if firstReplay == "" {
				firstReplay = replay
			}
			if k == 0 {
				jc.Failure = &junitFailure{Message: model.Summarize(v.Violations), Text: replay}
			}
			if tl != "" && violations == len(r.Violations) && k == 0 && v.History != nil {
				if err := writeExploreTimeline(tl, fmt.Sprintf("relaysim explore %s mode=%s", name, r.Mode), replay, v); err != nil {
					fmt.Fprintf(stderr, "relaysim explore: timeline: %v\n", err)
				} else {
					fmt.Fprintf(stdout, "timeline: %s\n", tl)
				}
			}
		}
		cases = append(cases, jc)
	}
	if junit != "" {
		s := junitSuite{Name: "relaysim explore " + name, Cases: cases}
		s.count()
		if err := writeJUnit(junit, junitReport([]junitSuite{s})); err != nil {
			fmt.Fprintf(stderr, "relaysim explore: %v\n", err)
		}
	}
	code := exitOK
	if violations > 0 {
		code = exitFail
	}
	s := exploreJSON{
		runSummary: runSummary{Summary: classOf(code), Exit: code, Command: "explore", Mode: modes, Violations: props, Replay: firstReplay, Evidence: evidence},
		Schedules:  schedules, Terminal: terminal, Searches: searches, Probes: probes, Exhausted: exhausted, FirstViolation: firstAt, Failing: violations,
		FootprintsUnknown: unknown,
	}
	writeExploreSummary(stdout, s)
	fmt.Fprintln(stdout, exploreLastLine(s))
	return code
}

// exploreBanner is a failing schedule's banner, built like a failed run's
// (sim.Report): the violated properties with their evidence, the trace
// lines around the first evidence line (from the schedule run again
// keeping its whole trace), the trace hash and the replay command.
func exploreBanner(name string, r *scenarios.ExploreReport, k int, v scenarios.ExploreViolation, file, replay string) string {
	rep := sim.Report{
		Headline:   fmt.Sprintf("relaysim FAILED  explore %s mode=%s: failing schedule %d of %d (%d choices)", name, r.Mode, k+1, r.Failing, len(v.Schedule)),
		Facts:      []string{"schedule: " + file},
		Violations: v.Violations,
		Replay:     []string{replay},
		Commit:     fmt.Sprintf("a schedule belongs to its commit (%s); on another commit it may run differently.", commitNote(sim.BuildCommit())),
	}
	if v.Whole != nil {
		rep.Trace, rep.TraceHash = v.Whole, v.Whole.Hash()
	}
	return rep.String()
}

// boundAndBudgets are the bound's flag and every budget's
// (sim.ExploreBudgets).
func boundAndBudgets() []string {
	out := []string{"bound"}
	for _, b := range sim.ExploreBudgets {
		out = append(out, b.Arg)
	}
	return out
}

// storyArgs are the flags a story's explore block sets too: given, one
// wins over the story's own.
func storyArgs() []string { return append(boundAndBudgets(), "horizon", "drain", "limit") }

// shapeFlags are the flags that shape a search, for a replay line.
func shapeFlags() []string { return append(boundAndBudgets(), "horizon", "drain", "depth") }

// budgetFlags repeats the flags that shape a search, for a replay line.
func budgetFlags(fs *flag.FlagSet) string {
	var b strings.Builder
	for _, n := range shapeFlags() {
		if f := fs.Lookup(n); f != nil && f.Value.String() != f.DefValue {
			fmt.Fprintf(&b, " -%s %s", n, f.Value.String())
		}
	}
	return b.String()
}

func sanitize(s string) string {
	s = strings.TrimSuffix(filepath.Base(s), ".txt")
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

// exploreParallel runs the command again as n worker processes, shard k
// of n each (proc.Run), prints their outputs in shard order and sums
// their typed results (exploreJSON, from the result file each child
// writes): each search runs whole in one worker, so the reports are those
// of -j 1. A worker that ends without a result, or with a harness or
// usage error, is the parent's harness error.
func exploreParallel(args []string, n int, stdout, stderr io.Writer) int {
	self, err := selfPath()
	if err != nil {
		fmt.Fprintf(stderr, "relaysim explore: %v\n", err)
		return exitHarness
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-j" || a == "--j":
			i++
			continue
		case strings.HasPrefix(a, "-j=") || strings.HasPrefix(a, "--j="):
			continue
		}
		rest = append(rest, a)
	}
	outs := make([]bytes.Buffer, n)
	ocs := make([]proc.Outcome, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ocs[k] = proc.Run(context.Background(), proc.Spec{
				Path: self, Args: append([]string{"explore", "-shard", fmt.Sprintf("%d/%d", k+1, n)}, rest...),
				Env:    jobEnv(os.Environ(), n, runtime.GOMAXPROCS(0)),
				Stdout: &outs[k], Stderr: stderr,
			})
		}()
	}
	wg.Wait()
	merged := exploreJSON{runSummary: runSummary{Command: "explore", Violations: []string{}}, Terminal: map[string]int{}, Searches: []searchJSON{}, Probes: map[string]int{}}
	exhausted := true
	for k := range n {
		var ws exploreJSON
		err := ocs[k].Decode(&ws)
		if err == nil && (ws.Exit != ocs[k].Exit || ws.Command != "explore") {
			err = fmt.Errorf("its result says %s exit %d, the process exited %d", ws.Command, ws.Exit, ocs[k].Exit)
		}
		if err != nil || ws.Exit == exitHarness || ws.Exit == exitUsage {
			fmt.Fprint(stdout, outs[k].String())
			if err != nil {
				fmt.Fprintf(stderr, "relaysim explore: worker %d/%d: %v\n", k+1, n, err)
			}
			fmt.Fprintf(stderr, "relaysim explore: worker %d/%d failed (exit %d)\n", k+1, n, ocs[k].Exit)
			return max(ocs[k].Exit, exitHarness)
		}
		// What the worker printed, less its summary line (the result it
		// wrote, byte for byte) and its last line, which the merged
		// ones replace.
		lines := strings.Split(strings.TrimRight(outs[k].String(), "\n"), "\n")
		result := strings.TrimSpace(string(ocs[k].Result))
		var kept []string
		for _, l := range lines[:len(lines)-1] {
			if l != result {
				kept = append(kept, l)
			}
		}
		merged.Mode = ws.Mode
		for _, p := range ws.Violations {
			if !slices.Contains(merged.Violations, p) {
				merged.Violations = append(merged.Violations, p)
			}
		}
		for _, l := range ws.Evidence {
			if !slices.Contains(merged.Evidence, l) {
				merged.Evidence = append(merged.Evidence, l)
			}
		}
		if merged.Replay == "" {
			merged.Replay = ws.Replay
		}
		if merged.FirstViolation == 0 {
			merged.FirstViolation = ws.FirstViolation
		}
		fmt.Fprintln(stdout, strings.Join(kept, "\n"))
		fmt.Fprintf(stdout, "(worker %d/%d: %s)\n", k+1, n, exploreLastLine(ws))
		merged.Schedules += ws.Schedules
		for k, v := range ws.Terminal {
			merged.Terminal[k] = v
		}
		merged.Searches = append(merged.Searches, ws.Searches...)
		for name, n := range ws.Probes {
			merged.Probes[name] += n
		}
		merged.Failing += ws.Failing
		merged.FootprintsUnknown += ws.FootprintsUnknown
		exhausted = exhausted && ws.Exhausted
	}
	code := exitOK
	if merged.Failing > 0 {
		code = exitFail
	}
	merged.Summary, merged.Exit, merged.Exhausted = classOf(code), code, exhausted
	writeExploreSummary(stdout, merged)
	fmt.Fprintln(stdout, exploreLastLine(merged))
	return code
}

// writeExploreTimeline draws a failing schedule's run as one HTML page.
func writeExploreTimeline(path, title, replay string, v scenarios.ExploreViolation) error {
	var b bytes.Buffer
	if err := timeline.Write(&b, timeline.Input{Title: title, Command: replay, History: v.History, Violations: v.Violations}); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

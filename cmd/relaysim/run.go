package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/relaysim/relaysim/mutants"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/plan"
	"github.com/relaysim/relaysim/system"
)

// runFlags are the flags shared by run, replay and sweep.
type runFlags struct {
	fs        *flag.FlagSet
	seed      string
	mode      string
	scheduler string
	trace     string
	cfg       sim.Config
	faults    bool
	cost      string
	bound     int
	limit     int
	versions  string
	upgrade   string
	names     string
	alphabet  string
	cpuprof   string
	memprof   string
	history   string
	timeline  string
	usage     io.Writer // where -h prints the flags
}

// newRunFlags defines the run flags; -h prints them to usage.
func newRunFlags(name string, usage io.Writer) *runFlags {
	f := &runFlags{fs: newFlagSet(name), usage: usage, cfg: sim.DefaultConfig()}
	fs := f.fs
	c := &f.cfg
	fs.StringVar(&f.seed, "seed", "0x2a", "root seed, hex (0x2a) or decimal")
	fs.StringVar(&f.mode, "mode", "bulk", "relay mode: single, bulk or stream (capped per pair of nodes by the protocol versions both speak)")
	fs.StringVar(&f.versions, "versions", "", "relay protocol version of each node, from n1: e.g. v1,v2,v3 (default: every node the latest, v3)")
	fs.StringVar(&f.upgrade, "upgrade", "", "run the seed as a rolling upgrade FROM:TO, e.g. v1:v3: every node starts at FROM and is restarted with TO one at a time during the load phase")
	fs.StringVar(&f.scheduler, "scheduler", "random", "scheduler: random, pct, exhaustive or first (the first ready op, no delays: what shrink prefers)")
	fs.StringVar(&f.trace, "trace", "", "write the whole trace to this file")
	fs.StringVar(&f.history, "history", "", "write the run's history (client events, deliveries, faults, tasks, samples, room logs) to this file as JSON lines, streamed")
	fs.String("mutant", "", mutantFlagUsage) // taken out before parsing: main.go, mutant.go
	fs.String("cover", "", coverFlagUsage)   // taken out before parsing: main.go, cover.go
	fs.StringVar(&f.timeline, "timeline", "", "write the run as a self-contained HTML timeline to this file (lanes per client, node and Redis; faults; the violation's evidence)")
	fs.StringVar(&f.cpuprof, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.StringVar(&f.memprof, "memprofile", "", "write a heap profile (taken at the end of the run, before its checks) to this file")
	fs.StringVar(&f.cost, "cost", "swarm", "cost model: swarm (per-seed latencies) or calibrated (contended CPUs and Redis, BENCHMARKS.md)")
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "relay nodes")
	fs.IntVar(&c.Users, "users", c.Users, "users")
	fs.IntVar(&c.Rooms, "rooms", c.Rooms, "rooms")
	fs.IntVar(&c.RoomsPerUser, "rooms-per-user", c.RoomsPerUser, "rooms each user joins at the start")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "fault phase (workload) length, virtual")
	fs.DurationVar(&c.Drain, "drain", c.Drain, "liveness drain length, virtual")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "sends per second (virtual)")
	fs.Float64Var(&c.Churn, "churn", c.Churn, "membership/connection changes per second")
	fs.DurationVar(&c.Tick, "tick", c.Tick, "action time quantum (coarser = denser)")
	fs.IntVar(&c.Executor.Core, "core", c.Executor.Core, "executor core pool size")
	fs.IntVar(&c.Executor.Max, "max", c.Executor.Max, "executor max pool size")
	fs.IntVar(&c.Executor.Queue, "queue", c.Executor.Queue, "executor queue capacity")
	fs.IntVar(&c.ChannelsPerPeer, "channels", c.ChannelsPerPeer, "gRPC connections per peer (0: each seed draws 1-4)")
	fs.IntVar(&c.PCTDepth, "pct-depth", c.PCTDepth, "priority changes of the pct scheduler")
	fs.IntVar(&f.bound, "bound", 2, "exhaustive scheduler: most preemptions per schedule")
	fs.IntVar(&f.limit, "max-schedules", 100000, "exhaustive scheduler: stop after this many schedules")
	fs.BoolVar(&f.faults, "faults", true, "inject faults (swarm: each seed draws its own mix)")
	fs.StringVar(&f.names, "names", "drawn", "room and user names: drawn (each seed draws ascii or wide from its own sub-seed), ascii or wide (other scripts, some at the longest allowed length)")
	fs.StringVar(&f.alphabet, "alphabet", "plain", "node ids and malformed names: plain (nodes n1, n2, ...) or wide (node ids of a wider alphabet, a start-up attempt with a malformed node id, a malformed name holding a Unicode format character); a sweep draws wide for about half its seeds unless told")
	fs.BoolVar(&c.Calm, "calm", false, "the mode-equivalence variant: membership still once traffic starts, no faults")
	fs.BoolVar(&c.ChurnOnly, "churn-only", false, "the churn-only variant: the seed's own workload (joins, leaves, moves, disconnects under traffic) with no fault and no upgrade; timely delivery judged with no fault excuse")
	fs.Float64Var(&c.Bounds.Network, "max-net-fault", c.Bounds.Network, "highest per-relay drop/dup/delay probability")
	// Each timed fault kind's count bound is its registry budget's flag.
	for _, k := range plan.Counted() {
		kb := plan.BudgetOf(k)
		fs.IntVar(kb.Bound(&c.Bounds), kb.Flag, *kb.Bound(&c.Bounds), kb.Usage)
	}
	fs.Float64Var(&c.Bounds.RecvBreaks, "max-recv-break", c.Bounds.RecvBreaks, "highest per-item probability that a relay stream breaks between an item's read and its delivery (stream mode)")
	fs.DurationVar(&c.StreamLinger, "stream-linger", c.StreamLinger, "each node's stream linger, how long a link keeps a stream open for more items before closing it for the ack (0: the default, 500ms)")
	fs.IntVar(&c.StreamBacklog, "stream-backlog", c.StreamBacklog, "each node's link backlog bound, queued plus unacknowledged stream items (0: a faulted seed draws it)")
	fs.Float64Var(&c.Overlap, "overlap", c.Overlap, "probability that a crash or upgrade restarts the node with its new incarnation started before the old one has stopped")
	fs.Float64Var(&c.Mixed, "mixed", c.Mixed, "share of seeds whose nodes differ in limits (MaxPayload, MaxRecipients) and protocol version, as during a config rollout")
	return f
}

// parse reads args into a validated config.
func (f *runFlags) parse(args []string) error {
	if err := parseFlags(f.fs, args, f.usage); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", f.fs.Arg(0))
	}
	seed, err := sim.ParseSeed(f.seed)
	if err != nil {
		return err
	}
	if f.scheduler == "exhaustive" {
		f.tiny()
	}
	f.cfg.Seed = seed
	f.cfg.Mode = system.Mode(f.mode)
	if f.versions != "" {
		if f.cfg.Versions, err = sim.ParseVersions(f.versions); err != nil {
			return fmt.Errorf("-versions: %w", err)
		}
	}
	if f.upgrade != "" {
		if f.versions != "" {
			return fmt.Errorf("-versions and -upgrade exclude each other (an upgrade starts every node at its FROM version)")
		}
		if f.cfg.Upgrade, err = sim.ParseUpgrade(f.upgrade); err != nil {
			return fmt.Errorf("-upgrade: %w", err)
		}
	}
	if f.cfg.Names, err = sim.ParseNameStyle(f.names); err != nil {
		return fmt.Errorf("-names: %w", err)
	}
	if f.cfg.Alphabet, err = sim.ParseAlphabet(f.alphabet); err != nil {
		return fmt.Errorf("-alphabet: %w", err)
	}
	f.cfg.Scheduler = f.scheduler
	if f.cfg.ChurnOnly && f.upgrade != "" {
		return fmt.Errorf("-churn-only and -upgrade exclude each other (a churn-only run restarts no node)")
	}
	if !f.faults || f.cfg.Calm || f.cfg.ChurnOnly {
		f.cfg.Bounds = sim.NoFaults()
	}
	f.cfg.KeepTrace = f.trace != "" || f.timeline != ""
	if f.cfg.CPU, err = sim.CostByName(f.cost); err != nil {
		return err
	}
	return f.cfg.Validate()
}

// tiny applies sim.TinyConfig to every size the user did not set: the
// exhaustive scheduler is for tiny configurations.
func (f *runFlags) tiny() {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	t := sim.TinyConfig()
	c := &f.cfg
	pick := func(name string, dst *int, v int) {
		if !set[name] {
			*dst = v
		}
	}
	pick("nodes", &c.Nodes, t.Nodes)
	pick("users", &c.Users, t.Users)
	pick("rooms", &c.Rooms, t.Rooms)
	pick("rooms-per-user", &c.RoomsPerUser, t.RoomsPerUser)
	if !set["duration"] {
		c.Duration = t.Duration
	}
	if !set["drain"] {
		c.Drain = t.Drain
	}
	if !set["rate"] {
		c.Rate = t.Rate
	}
	if !set["churn"] {
		c.Churn = t.Churn
	}
	if !set["faults"] {
		f.faults = false
	}
}

func cmdRun(name string, args []string, stdout, stderr io.Writer) int {
	f := newRunFlags(name, stdout)
	if err := f.parse(args); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, name, err)
	}
	if err := checkOutputs(f.outputs()...); err != nil {
		return usageError(stderr, name, err)
	}
	out, err := openOutputs(f)
	if err != nil {
		fmt.Fprintf(stderr, "relaysim %s: %v\n", name, err)
		return exitUsage
	}
	// rerun: a failed run that did not keep its whole trace runs again
	// keeping it (the banner shows the lines around the evidence); not from
	// inside a bubble (OnLeftovers).
	report := func(res *sim.Result, rerun bool) int {
		if err := out.close(res, stderr); err != nil && res.Err == nil {
			res.Err = err // the history asked for is not whole: exitHarness
		}
		summary(stdout, res)
		if res.Failed() {
			shown := res
			if rerun {
				shown = sim.WholeTrace(nil, res)
			}
			fmt.Fprint(stdout, Banner(shown, replayCommand(f), shrinkOf(replayCommand(f))))
		}
		if out.timelineDone {
			fmt.Fprintf(stdout, "timeline:    %s (open it in a browser)\n", f.timeline)
		}
		code := exitCode(res)
		printSummary(stdout, name, res, code, replayCommand(f))
		fmt.Fprintf(stdout, "trace-hash: %s\n", res.TraceHash)
		return code
	}
	// Goroutines left after teardown make synctest abort the process with
	// a dump of every goroutine: report readably (profile, trace and
	// history written first: that run is the one to inspect) and exit.
	f.cfg.OnLeftovers = func(res *sim.Result) { coverExit(report(res, false)) }
	var res *sim.Result
	if f.cfg.Scheduler == "exhaustive" {
		var n int
		var complete bool
		res, n, complete = sim.Explore(nil, f.cfg, f.bound, f.limit)
		fmt.Fprintf(stdout, "schedules:   %d explored (bound %d)%s\n", n, f.bound, map[bool]string{true: ", all of them", false: ""}[complete])
	} else {
		res = sim.Run(nil, f.cfg)
	}
	return report(res, true)
}

// runOutputs are a run's files: CPU profile, trace and history. close
// finishes them all, once, on every way out of a run, the leftover
// goroutines' os.Exit included.
type runOutputs struct {
	stopProfile func()
	trace       string
	history     *os.File
	buf         *bufio.Writer
	closed      bool
	// timeline is the -timeline file; timelineDone says it was written.
	timeline     string
	timelineDone bool
	title        string
	replay       func() string
}

// openOutputs starts the profiles and opens the history file of f.
// outputs are the files a run writes.
func (f *runFlags) outputs() []output {
	return []output{{flag: "trace", path: f.trace}, {flag: "timeline", path: f.timeline}, {flag: "history", path: f.history},
		{flag: "cpuprofile", path: f.cpuprof}, {flag: "memprofile", path: f.memprof}}
}

func openOutputs(f *runFlags) (*runOutputs, error) {
	o := &runOutputs{trace: f.trace, timeline: f.timeline, title: "relaysim " + f.fs.Name(), replay: func() string { return replayCommand(f) }}
	var err error
	if o.stopProfile, err = startProfiles(f.cpuprof, f.memprof, &f.cfg); err != nil {
		return nil, err
	}
	if f.history != "" {
		if o.history, err = os.Create(f.history); err != nil {
			o.stopProfile()
			return nil, err
		}
		o.buf = bufio.NewWriterSize(o.history, 1<<16)
		f.cfg.History = o.buf
	}
	return o, nil
}

// close stops the CPU profile, writes the trace and flushes the history.
// A trace it cannot write is said on stderr; a history it cannot finish is
// returned (the run's record is incomplete).
func (o *runOutputs) close(res *sim.Result, stderr io.Writer) error {
	if o.closed {
		return nil
	}
	o.closed = true
	o.stopProfile()
	if o.trace != "" && res.Trace != nil {
		if err := os.WriteFile(o.trace, []byte(res.Trace.Text()), 0o644); err != nil {
			fmt.Fprintf(stderr, "relaysim: write trace: %v\n", err)
		}
	}
	if o.timeline != "" && res.History != nil {
		if err := writeTimeline(o.timeline, o.title, o.replay(), res); err != nil {
			fmt.Fprintf(stderr, "relaysim: write timeline: %v\n", err)
		} else {
			o.timelineDone = true
		}
	}
	if o.history == nil {
		return nil
	}
	err := o.buf.Flush()
	if cerr := o.history.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

func summary(w io.Writer, r *sim.Result) {
	c, n := r.Config, r.Counts() // n: the timeline's header shows the same
	fmt.Fprintf(w, "relaysim run seed=%s mode=%s scheduler=%s nodes=%d users=%d rooms=%d channels=%d\n", c.Seed, c.Mode, c.Scheduler, c.Nodes, n.Users, c.Rooms, r.Channels)
	fmt.Fprintf(w, "faults:      %s (%d injected)\n", r.Mix, n.Faults)
	fmt.Fprintf(w, "messages:    %d sent, %d acked; %d deliveries (%d live, %d from the log); %d relays (%d failed)\n",
		r.Stats.Sends, n.Acked, n.Deliveries, n.Live, n.FromLog, r.Stats.Relays, r.Stats.RelayErrors)
	speed := 0.0
	if r.Wall > 0 {
		speed = r.Virtual.Seconds() / r.Wall.Seconds()
	}
	fmt.Fprintf(w, "time:        %s virtual, %s wall, %s real time, %d scheduled ops (%.0f/s)\n",
		r.Virtual.Round(time.Millisecond), r.Wall.Round(time.Millisecond), ratio(speed), r.Steps, float64(r.Steps)/r.Wall.Seconds())
	if rss := peakRSS(); rss != "" {
		fmt.Fprintf(w, "memory:      %s peak RSS\n", rss)
	}
	peaks := make([]string, len(r.Peaks))
	for i, p := range r.Peaks {
		peaks[i] = fmt.Sprintf("n%d=%d", i+1, p)
	}
	fmt.Fprintf(w, "peak pool:   %s (max %d)\n", strings.Join(peaks, " "), c.Executor.Max)
	if r.History != nil {
		fmt.Fprintf(w, "coverage:    %s\n", coverageLine(r.Coverage))
	}
	switch {
	case r.Err != nil:
		fmt.Fprintf(w, "result:      ERROR %v\n", r.Err)
	case r.BubbleErr != nil:
		fmt.Fprintf(w, "result:      FAIL %v\n", r.BubbleErr)
	case len(r.Violations) > 0:
		fmt.Fprintf(w, "result:      FAIL %d violations\n", len(r.Violations))
	default:
		fmt.Fprintf(w, "result:      ok, all properties hold\n")
	}
}

// ratio renders a speed-up with two significant digits below 10x (a run
// slower than real time shows as 0.49x, not 0x) and whole above.
func ratio(x float64) string {
	switch {
	case x < 1:
		return fmt.Sprintf("%.2fx", x)
	case x < 10:
		return fmt.Sprintf("%.1fx", x)
	}
	return fmt.Sprintf("%.0fx", x)
}

// replayCommand is the one command that replays this run.
func replayCommand(f *runFlags) string {
	var parts []string
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name != "seed" && fl.Name != "mode" && fl.Name != "trace" && fl.Name != "o" && fl.Name != "v" && fl.Name != "cpuprofile" && fl.Name != "memprofile" && fl.Name != "history" && fl.Name != "timeline" {
			parts = append(parts, fmt.Sprintf("-%s=%s", fl.Name, fl.Value))
		}
	})
	cmd := fmt.Sprintf("%s relaysim replay -seed %s -mode %s", goRun(), f.cfg.Seed, f.cfg.Mode)
	if len(parts) > 0 {
		cmd += " " + strings.Join(parts, " ")
	}
	return cmd + " -trace trace.txt"
}

// goRun is "go tool" with the overlay of the catalog mutant this binary was
// built with, if any (mutants.Apply: a mutant build sets RELAYSIM_OVERLAY
// when it starts), so that a printed command builds the same code.
func goRun() string {
	if o := os.Getenv(mutants.OverlayEnv); o != "" {
		return "go tool -overlay=" + o
	}
	return "go tool"
}

// set reports whether the command line set the flag.
func set(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

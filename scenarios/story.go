package scenarios

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/sim/plan"
	"github.com/relaysim/relaysim/system"
)

// A story is one pinned sim run written down as datadriven commands: the
// shrinker's output, a failing seed made readable, a regression test. It
// is not a scenario file: where those tell a cluster what to do command by
// command, a story gives sim.Run its whole input as data, and check runs
// it and expects every property to hold:
//
//	# shrunk from seed 0x2a mode bulk; fails on exactly-once
//	sim seed=0x2a mode=bulk nodes=2 users=2 rooms=1 duration=3s
//	----
//
//	mix none
//	----
//
//	actions
//	0s u1 create r1
//	50ms u1 join r1
//	...
//	----
//
//	faults
//	1.2s crash n2 for 1s
//	2.2s restart n2
//	----
//
//	check
//	----
//	ok
//
// sim carries every Config knob that differs from sim.DefaultConfig (the
// latencies, the scheduler's picks and every per-operation fault draw still
// come from the seed: that is what pins a story to its seed and mode);
// mix, actions and faults replace the seed's fault mix, workload and timed
// fault plan (sim.FormatMix, sim.FormatAction, sim.FormatFault: one line
// each). A story that leaves one out keeps the seed's own.
//
// A story may end with equiv instead of check: the two-mode form, for a
// failure only mode equivalence sees (FormatEquivStory). equiv runs the
// story in every relay mode (sim.Equivalence: each mode's calm variant of
// the story's run, so its sim line names one mode as every story's does,
// but every mode runs), judges each run on its own and compares what every
// user received; it prints ok, or each mode's own violations and the
// mode-equivalence ones.

// FormatStory writes a story of cfg (its Actions, Faults and Mix, when
// set, are written as data) whose check expects every property to hold,
// so that it fails while the bug it shows is there and passes once it is
// fixed. comment becomes its leading # lines.
func FormatStory(cfg sim.Config, comment string) string {
	return formatStory(cfg, comment, "check")
}

// FormatEquivStory writes the two-mode form of a story of cfg: its last
// command is equiv, which runs the story in every relay mode and expects
// every run to hold and every user to receive the same messages in all of
// them. cfg is best its calm variant in one mode (sim.Config.CalmVariant):
// equiv runs the calm variants, and the sim line then says so.
func FormatEquivStory(cfg sim.Config, comment string) string {
	return formatStory(cfg, comment, "equiv")
}

func formatStory(cfg sim.Config, comment, last string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
		if comment == "" {
			break
		}
		if l == "" {
			b.WriteString("#\n")
		} else {
			b.WriteString("# " + l + "\n")
		}
	}
	b.WriteString("# Messages: besides any send among the actions, the run sends its built-in bursts once\n")
	b.WriteString("# the cluster has healed and settled (sim.Settle; docs/running.md), judged for timely delivery.\n")
	for _, n := range notCarried(cfg) {
		b.WriteString("# NOT CARRIED (the story does not replay the run exactly): " + n + "\n")
	}
	b.WriteString(formatSimLine(cfg))
	b.WriteString("\n----\n\n")
	if cfg.Mix != nil {
		fmt.Fprintf(&b, "mix %s\n----\n\n", sim.FormatMix(*cfg.Mix))
	}
	if cfg.Actions != nil {
		b.WriteString("actions\n")
		for _, a := range cfg.Actions {
			b.WriteString(sim.FormatAction(a) + "\n")
		}
		b.WriteString("----\n\n")
	}
	if cfg.Faults != nil {
		b.WriteString("faults\n")
		for _, f := range cfg.Faults {
			b.WriteString(sim.FormatFault(f) + "\n")
		}
		b.WriteString("----\n\n")
	}
	b.WriteString(last + "\n----\nok\n")
	return b.String()
}

// notCarried names what of cfg a story cannot say.
func notCarried(cfg sim.Config) []string {
	var out []string
	if cfg.FixedCost != nil {
		out = append(out, "a fixed cost model (Config.FixedCost)")
	}
	if cfg.CPU != nil && costName(cfg.CPU) == "" {
		out = append(out, "an unnamed contended cost model (Config.CPU)")
	}
	if cfg.Chooser != nil || cfg.Exhaustive != nil {
		out = append(out, "the scheduler's picks (Config.Chooser or Config.Exhaustive)")
	}
	return out
}

// formatSimLine is the sim command: seed and mode, then every knob that
// differs from the default, six to a line.
func formatSimLine(cfg sim.Config) string {
	def := sim.DefaultConfig()
	args := []string{"seed=" + cfg.Seed.String(), "mode=" + string(cfg.Mode)}
	for _, k := range simKnobs {
		if v := k.get(&cfg); v != k.get(&def) {
			if k.flag {
				args = append(args, k.name)
			} else {
				args = append(args, k.name+"="+v)
			}
		}
	}
	var b strings.Builder
	b.WriteString("sim")
	for i, a := range args {
		if i > 0 && i%6 == 0 {
			b.WriteString(" \\\n   ")
		}
		b.WriteString(" " + a)
	}
	return b.String()
}

// knob is one Config setting of the sim command.
type knob struct {
	name string
	get  func(c *sim.Config) string
	set  func(c *sim.Config, v string) error
	flag bool // written bare when on; "name" or name=true reads as on
}

func intKnob(name string, p func(*sim.Config) *int) knob {
	return knob{name: name,
		get: func(c *sim.Config) string { return strconv.Itoa(*p(c)) },
		set: func(c *sim.Config, v string) (err error) {
			*p(c), err = strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("want a whole number")
			}
			return nil
		}}
}

func floatKnob(name string, p func(*sim.Config) *float64) knob {
	return knob{name: name,
		get: func(c *sim.Config) string { return strconv.FormatFloat(*p(c), 'g', -1, 64) },
		set: func(c *sim.Config, v string) (err error) {
			*p(c), err = strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("want a number such as 0.5")
			}
			return nil
		}}
}

func durKnob(name string, p func(*sim.Config) *time.Duration) knob {
	return knob{name: name,
		get: func(c *sim.Config) string { return p(c).String() },
		set: func(c *sim.Config, v string) (err error) {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("want a duration >= 0 such as 5s or 250ms")
			}
			*p(c) = d
			return nil
		}}
}

func boolKnob(name string, p func(*sim.Config) *bool) knob {
	return knob{name: name, flag: true,
		get: func(c *sim.Config) string { return strconv.FormatBool(*p(c)) },
		set: func(c *sim.Config, v string) (err error) {
			if v == "" {
				*p(c) = true
				return nil
			}
			*p(c), err = strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false")
			}
			return nil
		}}
}

// simKnobs are the sim command's settings, named as relaysim run's flags
// where one exists.
var simKnobs = append([]knob{
	intKnob("nodes", func(c *sim.Config) *int { return &c.Nodes }),
	intKnob("users", func(c *sim.Config) *int { return &c.Users }),
	intKnob("rooms", func(c *sim.Config) *int { return &c.Rooms }),
	intKnob("rooms-per-user", func(c *sim.Config) *int { return &c.RoomsPerUser }),
	durKnob("duration", func(c *sim.Config) *time.Duration { return &c.Duration }),
	durKnob("drain", func(c *sim.Config) *time.Duration { return &c.Drain }),
	floatKnob("rate", func(c *sim.Config) *float64 { return &c.Rate }),
	floatKnob("churn", func(c *sim.Config) *float64 { return &c.Churn }),
	durKnob("tick", func(c *sim.Config) *time.Duration { return &c.Tick }),
	boolKnob("calm", func(c *sim.Config) *bool { return &c.Calm }),
	boolKnob("churn-only", func(c *sim.Config) *bool { return &c.ChurnOnly }),
	{name: "names",
		get: func(c *sim.Config) string { return cmpOr(string(c.Names), "drawn") },
		set: func(c *sim.Config, v string) (err error) { c.Names, err = sim.ParseNameStyle(v); return err }},
	{name: "alphabet",
		get: func(c *sim.Config) string { return c.Alphabet.String() },
		set: func(c *sim.Config, v string) (err error) { c.Alphabet, err = sim.ParseAlphabet(v); return err }},
	{name: "scheduler",
		get: func(c *sim.Config) string { return c.Scheduler },
		set: func(c *sim.Config, v string) error { c.Scheduler = v; return nil }},
	intKnob("pct-depth", func(c *sim.Config) *int { return &c.PCTDepth }),
	intKnob("core", func(c *sim.Config) *int { return &c.Executor.Core }),
	intKnob("max", func(c *sim.Config) *int { return &c.Executor.Max }),
	intKnob("queue", func(c *sim.Config) *int { return &c.Executor.Queue }),
	durKnob("keepalive", func(c *sim.Config) *time.Duration { return &c.Executor.KeepAlive }),
	intKnob("outbox", func(c *sim.Config) *int { return &c.OutboxSize }),
	intKnob("stream-backlog", func(c *sim.Config) *int { return &c.StreamBacklog }),
	durKnob("stream-linger", func(c *sim.Config) *time.Duration { return &c.StreamLinger }),
	intKnob("channels", func(c *sim.Config) *int { return &c.ChannelsPerPeer }),
	durKnob("sample-every", func(c *sim.Config) *time.Duration { return &c.SampleEvery }),
	floatKnob("mixed", func(c *sim.Config) *float64 { return &c.Mixed }),
	floatKnob("overlap", func(c *sim.Config) *float64 { return &c.Overlap }),
	{name: "versions",
		get: func(c *sim.Config) string { return formatVersions(c.Versions) },
		set: func(c *sim.Config, v string) (err error) { c.Versions, err = sim.ParseVersions(v); return err }},
	{name: "upgrade",
		get: func(c *sim.Config) string {
			if c.Upgrade == nil {
				return "none"
			}
			return c.Upgrade.String()
		},
		set: func(c *sim.Config, v string) (err error) {
			if v == "none" {
				c.Upgrade = nil
				return nil
			}
			c.Upgrade, err = sim.ParseUpgrade(v)
			return err
		}},
	{name: "cost",
		get: func(c *sim.Config) string { return cmpOr(costName(c.CPU), "custom") },
		set: func(c *sim.Config, v string) (err error) { c.CPU, err = sim.CostByName(v); return err }},
	boolKnob("by-arrival", func(c *sim.Config) *bool { return &c.ByArrival }),
	boolKnob("ungated", func(c *sim.Config) *bool { return &c.Ungated }),
	floatKnob("max-net-fault", func(c *sim.Config) *float64 { return &c.Bounds.Network }),
	floatKnob("max-redis-errors", func(c *sim.Config) *float64 { return &c.Bounds.RedisErrors }),
}, faultKnobs()...)

// faultKnobs are the bounds of the faults a seed may draw, in the mix's
// order (plan.MixKnobs): each registered fault kind's count, named by its
// flag (plan.Budget.Flag), and the recv-break probability.
func faultKnobs() []knob {
	var out []knob
	for _, name := range plan.MixKnobs() {
		if k, ok := plan.ByKnob(name); ok {
			b := plan.BudgetOf(k)
			out = append(out, intKnob(b.Flag, func(c *sim.Config) *int { return b.Bound(&c.Bounds) }))
		} else if name == plan.DrawRecvBreak {
			out = append(out, floatKnob("max-recv-break", func(c *sim.Config) *float64 { return &c.Bounds.RecvBreaks }))
		}
	}
	return out
}

func knobNames() string {
	names := []string{"seed", "mode"}
	for _, k := range simKnobs {
		names = append(names, k.name)
	}
	return strings.Join(names, ", ")
}

func formatVersions(vs []int) string {
	if len(vs) == 0 {
		return "latest"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("v%d", v)
	}
	return strings.Join(parts, ",")
}

// costName is the name of a named contended cost model ("swarm" for nil,
// "" for one no name gives).
func costName(m *sim.CPUModel) string {
	if m == nil {
		return "swarm"
	}
	for _, n := range sim.CostModels() {
		if c, err := sim.CostByName(n); err == nil && c != nil && *c == *m {
			return n
		}
	}
	return ""
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ParseStory reads a story's text into the sim.Config its check (or
// equiv) runs (name is for errors, which name the file's line). It runs
// nothing.
func ParseStory(name, text string) (sim.Config, error) {
	st, err := ReadStory(name, text)
	return st.Config, err
}

// ParsedStory is a story read (ReadStory): the config its last command
// runs, and which command that is.
type ParsedStory struct {
	Config sim.Config
	// Equiv says the story ends with equiv (the two-mode form): it runs
	// Config in every mode (sim.Equivalence), not once.
	Equiv bool
}

// ReadStory reads a story's text (name is for errors). It runs nothing.
func ReadStory(name, text string) (ParsedStory, error) {
	e := &storyEnv{name: name}
	if err := e.play(text); err != nil {
		return ParsedStory{}, err
	}
	return ParsedStory{Config: e.cfg, Equiv: e.equiv}, nil
}

// RunStory plays a story: its check runs sim.Run on the story's config.
// The error is the story's (a bad line, no check, an equiv story:
// RunEquivStory plays those); a run that could not finish is the result's
// Err, as for any run.
func RunStory(text string) (*sim.Result, error) { return runStory("story", text) }

// RunEquivStory plays a two-mode story: its equiv runs the story in every
// mode (sim.Equivalence) and returns each mode's run and the differential
// violations.
func RunEquivStory(text string) ([]*sim.Result, []model.Violation, error) {
	st, err := ReadStory("story", text)
	if err != nil {
		return nil, nil, err
	}
	if !st.Equiv {
		return nil, nil, fmt.Errorf("story: it ends with check, not equiv: RunStory plays it")
	}
	runs, vs := sim.Equivalence(nil, st.Config)
	return runs, vs, nil
}

// RunStoryFile plays the story at path.
func RunStoryFile(path string) (*sim.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return runStory(path, string(b))
}

func runStory(name, text string) (*sim.Result, error) {
	st, err := ReadStory(name, text)
	if err != nil {
		return nil, err
	}
	if st.Equiv {
		return nil, fmt.Errorf("%s: it ends with equiv (every mode): RunEquivStory plays it", name)
	}
	return sim.Run(nil, st.Config), nil
}

// storyEnv reads a story's commands in order.
type storyEnv struct {
	name    string
	cfg     sim.Config
	sim     bool
	checked bool
	equiv   bool // the story ends with equiv
	last    string
	seen    map[string]bool
	// run, when set, runs check (the test's sim.Run) and runEquiv equiv
	// (sim.Equivalence); unset, they only validate.
	run      func(cfg sim.Config) *sim.Result
	runEquiv func(cfg sim.Config) ([]*sim.Result, []model.Violation)
}

// play reads text's commands; it runs nothing (check only validates).
func (e *storyEnv) play(text string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// Only reading happens here (play runs nothing), so whatever
			// datadriven could not take is a story it cannot read.
			msg := fmt.Sprintf("<string>: cannot read it as a story: %v", r)
			if pe, ok := r.(storyParseError); ok {
				msg = string(pe)
			}
			err = fmt.Errorf("%s", strings.ReplaceAll(msg, "<string>", e.name))
		}
	}()
	if !flag.Parsed() {
		// Outside a test (relaysim replay -story) datadriven asks
		// testing.Verbose, which wants the testing flags registered and
		// parsed; dst's bubble runner does the same.
		testing.Init()
		_ = flag.CommandLine.Parse(nil)
	}
	var ferr error
	datadriven.RunTestFromStringAny(parseTB{}, text, func(_ testing.TB, d *datadriven.TestData) string {
		if ferr == nil {
			if _, err := e.handle(d); err != nil {
				ferr = fmt.Errorf("%s: %w", filePos(e.name, d.Pos), err)
			}
		}
		return d.Expected
	})
	if ferr == nil && !e.checked {
		ferr = fmt.Errorf("%s: no check (a story ends with check, or equiv for every mode)", e.name)
	}
	return ferr
}

// handle reads one command; check returns what the run found.
func (e *storyEnv) handle(d *datadriven.TestData) (string, error) {
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	if e.seen[d.Cmd] {
		return "", fmt.Errorf("%s given twice", d.Cmd)
	}
	if d.Cmd != "sim" && !e.sim && storyCommands[d.Cmd] {
		return "", fmt.Errorf("%s before sim (a story starts with sim seed=... mode=...)", d.Cmd)
	}
	if e.checked {
		return "", fmt.Errorf("%s after %s (%s ends a story)", d.Cmd, e.last, e.last)
	}
	e.seen[d.Cmd] = true
	switch d.Cmd {
	case "sim":
		return "", e.handleSim(d)
	case "mix":
		return "", e.handleMix(d)
	case "actions":
		e.cfg.Actions = []sim.Action{}
		return "", bodyLines(d, func(l string) error {
			a, err := sim.ParseAction(l)
			e.cfg.Actions = append(e.cfg.Actions, a)
			return err
		})
	case "faults":
		e.cfg.Faults = []sim.Fault{}
		return "", bodyLines(d, func(l string) error {
			f, err := sim.ParseFault(l)
			e.cfg.Faults = append(e.cfg.Faults, f)
			return err
		})
	case "schedule":
		if _, err := dst.ParseSchedule(d.Input); err != nil {
			return "", fmt.Errorf("schedule: %w", err)
		}
		return "", fmt.Errorf("schedule: a story's run follows its seed's %s scheduler, which cannot follow a schedule of op keys; "+
			"a model checker's counterexample is carried by its explore scenario file (schedule mode=M before the explore block) and replays under relaysim explore -scenario FILE", e.cfg.Scheduler)
	case "check":
		return e.handleCheck()
	case "equiv":
		return e.handleEquiv()
	}
	return "", fmt.Errorf("unknown command %q (a story's commands: sim, mix, actions, faults, check or equiv)", d.Cmd)
}

var storyCommands = map[string]bool{"sim": true, "mix": true, "actions": true, "faults": true, "schedule": true, "check": true, "equiv": true}

func (e *storyEnv) handleSim(d *datadriven.TestData) error {
	e.cfg, e.sim = sim.DefaultConfig(), true
	if d.Input != "" {
		return fmt.Errorf("sim takes no lines under it")
	}
	var seed, mode bool
	seen := map[string]bool{}
	for _, a := range d.CmdArgs {
		if seen[a.Key] {
			return fmt.Errorf("sim: %s given twice", a.Key)
		}
		seen[a.Key] = true
		if len(a.Vals) > 1 {
			return fmt.Errorf("sim: %s: one value, not a list", a.Key)
		}
		v := ""
		if len(a.Vals) == 1 {
			v = a.Vals[0]
		}
		switch a.Key {
		case "seed":
			s, err := sim.ParseSeed(v)
			if err != nil {
				return fmt.Errorf("sim: seed=%s: %w", v, err)
			}
			e.cfg.Seed, seed = s, true
			continue
		case "mode":
			if _, err := system.ParseMode(v); err != nil {
				return fmt.Errorf("sim: mode=%s: %w", v, err)
			}
			e.cfg.Mode, mode = system.Mode(v), true
			continue
		}
		k, ok := knobNamed(a.Key)
		if !ok {
			return fmt.Errorf("sim: unknown argument %q (it takes %s)", a.Key, knobNames())
		}
		if len(a.Vals) == 0 && !k.flag {
			return fmt.Errorf("sim: %s needs a value (%s=...)", a.Key, a.Key)
		}
		if err := k.set(&e.cfg, v); err != nil {
			return fmt.Errorf("sim: %s=%s: %w", a.Key, v, err)
		}
	}
	if !seed || !mode {
		return fmt.Errorf("sim: a story is pinned to a seed and a mode: give seed= and mode=")
	}
	if err := e.cfg.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

func knobNamed(name string) (knob, bool) {
	for _, k := range simKnobs {
		if k.name == name {
			return k, true
		}
	}
	return knob{}, false
}

func (e *storyEnv) handleMix(d *datadriven.TestData) error {
	if d.Input != "" {
		return fmt.Errorf("mix takes its knobs on its line (mix crash=1 drop-req=0.02, or mix none)")
	}
	parts := make([]string, len(d.CmdArgs))
	for i, a := range d.CmdArgs {
		parts[i] = a.String()
	}
	m, err := sim.ParseMix(strings.Join(parts, " "))
	if err != nil {
		return err
	}
	e.cfg.Mix = &m
	return nil
}

// bodyLines reads each non-blank line under a command; an error names the
// line's kind and place (the command's line plus the line's offset).
func bodyLines(d *datadriven.TestData, read func(line string) error) error {
	if len(d.CmdArgs) > 0 {
		return fmt.Errorf("%s takes no arguments, only lines under it", d.Cmd)
	}
	if d.Input == "" {
		return nil
	}
	for i, l := range strings.Split(d.Input, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if err := read(strings.TrimSpace(l)); err != nil {
			return fmt.Errorf("line %d of %s (%s): %w", i+1, d.Cmd, l, err)
		}
	}
	return nil
}

// handleCheck runs the story (when it has a runner): "ok", or each
// violated property's violations (at most five each) and what stopped a
// run that could not finish.
func (e *storyEnv) handleCheck() (string, error) {
	e.checked, e.last = true, "check"
	if e.run == nil {
		return "", nil
	}
	return checkOutput(e.run(e.cfg)), nil
}

// handleEquiv runs the story in every mode (when it has a runner): "ok",
// or each mode's own findings (as check prints them, each line under the
// mode's name) and the mode-equivalence violations.
func (e *storyEnv) handleEquiv() (string, error) {
	e.checked, e.equiv, e.last = true, true, "equiv"
	if e.runEquiv == nil {
		return "", nil
	}
	runs, vs := e.runEquiv(e.cfg)
	return EquivOutput(runs, vs), nil
}

// EquivOutput is what a story's equiv prints for these runs and
// differential violations.
func EquivOutput(runs []*sim.Result, vs []model.Violation) string {
	var b strings.Builder
	for _, r := range runs {
		out := checkOutput(r)
		if out == "ok\n" {
			continue
		}
		for _, l := range strings.SplitAfter(out, "\n") {
			if l != "" && !strings.HasPrefix(l, " ") {
				l = string(r.Config.Mode) + ": " + l
			}
			b.WriteString(l)
		}
	}
	if len(vs) > 0 {
		b.WriteString(checkOutput(&sim.Result{Violations: vs}))
	}
	if b.Len() == 0 {
		return "ok\n"
	}
	return b.String()
}

func checkOutput(res *sim.Result) string {
	var b strings.Builder
	if res.Err != nil {
		fmt.Fprintf(&b, "error: %v\n", res.Err)
	}
	if res.BubbleErr != nil {
		fmt.Fprintf(&b, "bubble: %v\n", res.BubbleErr)
	}
	byProp := map[string][]model.Violation{}
	for _, v := range res.Violations {
		byProp[v.Property] = append(byProp[v.Property], v)
	}
	for _, p := range model.Properties {
		vs := byProp[p]
		if len(vs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s: %d violations\n", p, len(vs))
		for _, v := range vs[:min(5, len(vs))] {
			fmt.Fprintf(&b, "  %s\n", v)
		}
	}
	if b.Len() == 0 {
		return "ok\n"
	}
	return b.String()
}

// parseTB is the testing.TB datadriven's reader is given outside a test
// (relaysim replay -story): its only calls that matter are the fatal ones,
// for a line it cannot parse, which play turns into an error.
type parseTB struct{ testing.TB }

type storyParseError string

func (parseTB) Helper()             {}
func (parseTB) Failed() bool        { return false }
func (parseTB) Skipped() bool       { return false }
func (parseTB) Log(...any)          {}
func (parseTB) Logf(string, ...any) {}
func (parseTB) Fatal(args ...any)   { panic(storyParseError(fmt.Sprint(args...))) }
func (parseTB) Fatalf(format string, args ...any) {
	panic(storyParseError(fmt.Sprintf(format, args...)))
}
func (parseTB) Error(args ...any) { panic(storyParseError(fmt.Sprint(args...))) }
func (parseTB) Errorf(format string, args ...any) {
	panic(storyParseError(fmt.Sprintf(format, args...)))
}
func (parseTB) FailNow() { panic(storyParseError("failed")) }

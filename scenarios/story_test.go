package scenarios

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/plan"
	"github.com/relaysim/relaysim/system"
)

// TestShrunkStories plays every story of testdata/shrunk/ in the mode
// and seed it is pinned to and compares each command's output (check's
// "ok", or the violations) with the file. If this fails, run with
// -rewrite and inspect the diff:
//
//	go test ./scenarios -run TestShrunkStories -rewrite && git diff scenarios/testdata/shrunk
func TestShrunkStories(t *testing.T) {
	files, err := filepath.Glob("testdata/shrunk/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no stories in testdata/shrunk/")
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			playStory(t, path)
		})
	}
}

// playStory plays the story at path under datadriven.RunTest.
func playStory(t *testing.T, path string) {
	e := &storyEnv{name: path, run: func(cfg sim.Config) *sim.Result { return sim.Run(t, cfg) },
		runEquiv: func(cfg sim.Config) ([]*sim.Result, []model.Violation) { return sim.Equivalence(t, cfg) }}
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		out, err := e.handle(d)
		require.NoError(t, err, "%s", d.Pos)
		return out
	})
	require.True(t, e.checked, "%s: no check", path)
}

// runStoryIn is RunStory inside the test's own bubble.
func runStoryIn(t *testing.T, name, text string) *sim.Result {
	cfg, err := ParseStory(name, text)
	require.NoError(t, err)
	return sim.Run(t, cfg)
}

// TestStoryReplaysTheRun: a real run made explicit (its actions, faults
// and mix as data), written as a story and played again, is the same run:
// the same trace hash and the same verdict. The story also plays under
// datadriven as a file whose check expects ok.
func TestStoryReplaysTheRun(t *testing.T) {
	for _, seed := range []sim.Seed{0x2a, 7, 1234} {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Duration, cfg.Drain = seed, 3*time.Second, 20*time.Second
		if seed == 7 {
			cfg.Mode, cfg.Nodes, cfg.Upgrade = system.ModeStream, 2, &sim.Upgrade{From: 1, To: 3}
		}
		first := sim.Run(t, cfg)
		require.NoError(t, first.Err)
		ex := cfg
		ex.Actions, ex.Faults = first.Actions, first.Faults
		mix := first.Mix
		ex.Mix = &mix
		text := FormatStory(ex, "seed "+seed.String()+" made explicit")
		again := runStoryIn(t, "story", text)
		require.NoError(t, again.Err)
		assert.Equal(t, first.TraceHash, again.TraceHash, "seed %s: the story's run differs\n%s", seed, text)
		assert.Equal(t, len(first.Violations), len(again.Violations))
		if len(first.Violations) == 0 {
			path := filepath.Join(t.TempDir(), "story.txt")
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			playStory(t, path)
		}
	}
}

// TestStoryConfigRoundTrip: every knob a story's sim line carries reads
// back to the same config.
func TestStoryConfigRoundTrip(t *testing.T) {
	def := sim.DefaultConfig()
	odd := def
	odd.Seed, odd.Mode, odd.Nodes, odd.Users, odd.Rooms, odd.RoomsPerUser = 99, system.ModeSingle, 4, 7, 2, 1
	odd.Duration, odd.Drain, odd.Rate, odd.Churn, odd.Tick = 2500*time.Millisecond, 0, 12.5, 0, 10*time.Millisecond
	odd.Names, odd.Scheduler, odd.PCTDepth = sim.NamesWide, "pct", 5
	odd.Executor = system.ExecutorConfig{Core: 1, Max: 3, Queue: 0, KeepAlive: time.Second}
	odd.OutboxSize, odd.StreamBacklog, odd.StreamLinger, odd.ChannelsPerPeer, odd.SampleEvery = 8, 30, 200*time.Millisecond, 2, 500*time.Millisecond
	odd.Mixed, odd.Overlap, odd.Versions = 1, 0, []int{1, 3, 2, 3}
	odd.Bounds = sim.FaultBounds{Network: 0.1, RedisErrors: 0.2, Crashes: 2, Partitions: 3, Pauses: 4, RedisOutages: 5, RouteFlushes: 6,
		Vanishes: 7, SlowConsumers: 8, RedisSpikes: 9, Forgeries: 10, Steals: 11, RecvBreaks: 0.3, Blips: 12,
		Floods: 13, Supersedes: 14}
	odd.ByArrival, odd.Ungated = true, true
	cpu, err := sim.CostByName("calibrated")
	require.NoError(t, err)
	odd.CPU = cpu
	up := def
	up.Upgrade, up.Calm, up.Bounds = &sim.Upgrade{From: 1, To: 2}, true, sim.NoFaults()
	churn := def.ChurnVariant(system.ModeStream)
	mix := sim.FaultMix{DropRequest: 0.013, Crashes: 1, RecvBreak: 1e-05}
	withPlan := def
	withPlan.Mix, withPlan.Actions, withPlan.Faults = &mix, []sim.Action{{At: time.Second, User: "u1", Kind: sim.ActJoin, Room: "r1"}}, []sim.Fault{}
	for name, cfg := range map[string]sim.Config{"default": def, "odd": odd, "upgrade": up, "churn-only": churn, "with plan": withPlan} {
		text := FormatStory(cfg, "a comment\n\nover lines")
		got, err := ParseStory("story", text)
		require.NoError(t, err, "%s:\n%s", name, text)
		assert.Equal(t, cfg, got, "%s:\n%s", name, text)
	}
	assert.True(t, strings.HasPrefix(FormatStory(def, "how it was made\n\nreplay: x"), "# how it was made\n#\n# replay: x\n# Messages: besides any send among the actions, the run sends its built-in bursts once\n"))
	assert.Contains(t, FormatStory(def, ""), "(sim.Settle; docs/running.md), judged for timely delivery.\nsim seed=0x2a mode=bulk\n", "a story says where its messages come from")
}

// TestEquivStoryRoundTrip: the two-mode form reads back to the same
// config and says it ends with equiv; the one-mode form does not, and
// each Run function refuses the other's form.
func TestEquivStoryRoundTrip(t *testing.T) {
	cfg := sim.DefaultConfig().CalmVariant(system.ModeSingle)
	cfg.Nodes, cfg.Scheduler, cfg.Mix = 1, "first", &sim.FaultMix{}
	cfg.Actions, cfg.Faults = []sim.Action{{User: "u1", Kind: sim.ActCreate, Room: "r1"}, {At: 50 * time.Millisecond, User: "u1", Kind: sim.ActJoin, Room: "r1"}}, []sim.Fault{}
	text := FormatEquivStory(cfg, "two modes")
	assert.True(t, strings.HasSuffix(text, "\nequiv\n----\nok\n"), "%s", text)
	st, err := ReadStory("story", text)
	require.NoError(t, err, "%s", text)
	assert.True(t, st.Equiv)
	assert.Equal(t, cfg, st.Config)
	one, err := ReadStory("story", FormatStory(cfg, ""))
	require.NoError(t, err)
	assert.False(t, one.Equiv)
	assert.Equal(t, cfg, one.Config)
	_, err = RunStory(text)
	assert.ErrorContains(t, err, "it ends with equiv (every mode): RunEquivStory plays it")
	_, _, err = RunEquivStory(FormatStory(cfg, ""))
	assert.ErrorContains(t, err, "it ends with check, not equiv")
}

// TestEquivOutput: equiv prints ok, or each mode's own findings under
// the mode's name and then the differential violations, grouped as check
// groups them.
func TestEquivOutput(t *testing.T) {
	run := func(mode system.Mode, vs ...model.Violation) *sim.Result {
		return &sim.Result{Config: sim.Config{Mode: mode}, Violations: vs}
	}
	calm := []*sim.Result{run(system.ModeSingle), run(system.ModeBulk), run(system.ModeStream)}
	assert.Equal(t, "ok\n", EquivOutput(calm, nil))
	loss := model.Violation{Property: model.PropNoLoss, User: "u1", Room: "r1", Seq: 2, Detail: "never delivered"}
	diff := model.Violation{Property: model.PropModeEquivalence, User: "u1", Room: "r1", Detail: "1 message(s) delivered in the single run but not in the bulk run: u1/m1"}
	got := EquivOutput([]*sim.Result{run(system.ModeSingle), run(system.ModeBulk, loss), run(system.ModeStream)}, []model.Violation{diff})
	assert.Equal(t, "bulk: no-loss: 1 violations\n  "+loss.String()+"\nmode-equivalence: 1 violations\n  "+diff.String()+"\n", got)
}

// TestStoryErrors: a bad story is one line naming the file's line.
func TestStoryErrors(t *testing.T) {
	const head = "sim seed=0x2a mode=bulk\n----\n\n"
	for _, tc := range []struct{ name, text, want string }{
		{"no sim", "check\n----\nok\n", "bad.txt:1: check before sim"},
		{"no check", head, "bad.txt: no check"},
		{"unknown command", head + "chek\n----\n", `bad.txt:4: unknown command "chek"`},
		{"unknown knob", "sim seed=1 mode=bulk nodse=2\n----\n", `bad.txt:1: sim: unknown argument "nodse"`},
		{"bad knob value", "sim seed=1 mode=bulk duration=5\n----\n", `bad.txt:1: sim: duration=5: want a duration`},
		{"no mode", "sim seed=1\n----\n", "bad.txt:1: sim: a story is pinned to a seed and a mode"},
		{"bad mode", "sim seed=1 mode=bluk\n----\n", "bad.txt:1: sim: mode=bluk"},
		{"invalid config", "sim seed=1 mode=bulk nodes=0\n----\n", "bad.txt:1: sim: nodes must be 1..64"},
		{"bad action", head + "actions\n0s u1 create r1\n1s u1 sned r1 m1\n----\n", `bad.txt:4: line 2 of actions (1s u1 sned r1 m1): unknown action kind "sned"`},
		{"bad fault", head + "faults\n1s crash n1 for soon\n----\n", `bad.txt:4: line 1 of faults (1s crash n1 for soon): crash: "soon": want a duration`},
		{"bad mix", head + "mix crash=x\n----\n", `bad.txt:4: mix: crash=x`},
		{"twice", head + "mix none\n----\n\nmix none\n----\n", "bad.txt:7: mix given twice"},
		{"after check", head + "check\n----\nok\n\nmix none\n----\n", "bad.txt:8: mix after check"},
		{"after equiv", head + "equiv\n----\nok\n\nmix none\n----\n", "bad.txt:8: mix after equiv (equiv ends a story)"},
		{"check and equiv", head + "check\n----\nok\n\nequiv\n----\nok\n", "bad.txt:8: equiv after check"},
		{"equiv before sim", "equiv\n----\nok\n", "bad.txt:1: equiv before sim"},
		{"schedule", head + "schedule\n# relaysim schedule v1: x\nn1 task a\n----\n", "bad.txt:4: schedule: a story's run follows its seed's random scheduler"},
		{"bad directive", head + "sim =x\n----\n", "bad.txt:4: cannot parse directive"},
		{"subtest", head + "subtest a\n", "bad.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStory("bad.txt", tc.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestScenarioCarriesSchedule: a schedule command in a scenario file makes
// the next explore block, in the schedule's mode, replay that schedule
// instead of searching (here the empty schedule: the default picks, one
// run); in another mode the block searches. A choice the run never offers
// is a divergence naming it.
func TestScenarioCarriesSchedule(t *testing.T) {
	story, err := Story("send-races-join")
	require.NoError(t, err)
	at := strings.Index(story, "\nexplore ")
	require.Positive(t, at)
	with := func(choices string) string {
		return story[:at+1] + "schedule mode=bulk\n# relaysim schedule v1: one choice per line (op key, key!fault, or @tick)\n" + choices + "----\n\n" + story[at+1:]
	}
	play := func(mode system.Mode, text string) (rs []*ExploreReport, err error) {
		synctest.Test(t, func(t *testing.T) { rs, err = ExploreText(t, "carried.txt", text, mode, DefaultExploreOptions()) })
		return rs, err
	}
	rs, err := play(system.ModeBulk, with(""))
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, 1, rs[0].Schedules, "the carried schedule is replayed, not searched")
	assert.False(t, rs[0].Exhausted)
	rs, err = play(system.ModeSingle, with(""))
	require.NoError(t, err)
	assert.Greater(t, rs[0].Schedules, 1, "another mode searches")
	_, err = play(system.ModeBulk, with("u9|client|a1 nothing\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not repeat itself")
	assert.Contains(t, err.Error(), "u9|client|a1 nothing")
}

// TestStoryCarriesEveryKnob: each setting of sim.Config, changed alone
// from the default, is carried by a story's sim line, so a knob added to
// Config and not to the story fails here. What a story does not carry is
// listed, with why.
func TestStoryCarriesEveryKnob(t *testing.T) {
	notCarried := map[string]string{
		"WorkloadConfig.Nodes": "the run takes the cluster's Nodes",
		"ChurnOnly":            "valid only with no fault bounds: TestStoryConfigRoundTrip's churn-only case",
		"KeepTrace":            "output, not input", "History": "output", "OnRelease": "a hook", "OnLeftovers": "a hook", "OnEnd": "a hook", "RecordNode": "a hook",
		"Chooser": "rapid's draws: named by a NOT CARRIED line", "Exhaustive": "a search's state: named by a NOT CARRIED line",
		"FixedCost":           "named by a NOT CARRIED line",
		"Executor.BeforeTask": "a hook", "Executor.AfterTask": "a hook", "Executor.OnPanic": "a hook", "Executor.OnSubmit": "a hook", "Executor.Probe": "a hook (the node sets it: code probes)",
		"Actions": "the actions block", "Faults": "the faults block", "Mix": "the mix command",
	}
	special := map[string]func(c *sim.Config){
		"Mode":                    func(c *sim.Config) { c.Mode = system.ModeStream },
		"Scheduler":               func(c *sim.Config) { c.Scheduler = "pct" },
		"WorkloadConfig.Names":    func(c *sim.Config) { c.Names = sim.NamesASCII },
		"WorkloadConfig.Alphabet": func(c *sim.Config) { c.Alphabet = sim.AlphabetWide },
		"Versions":                func(c *sim.Config) { c.Versions = []int{1, 2} },
		"Upgrade":                 func(c *sim.Config) { c.Upgrade = &sim.Upgrade{From: 1, To: 3} },
		"CPU": func(c *sim.Config) {
			m, err := sim.CostByName("calibrated")
			require.NoError(t, err)
			c.CPU = m
		},
	}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			name := path + v.Type().Field(i).Name
			if _, ok := notCarried[name]; ok {
				continue
			}
			cfg := sim.DefaultConfig()
			f := fieldByPath(reflect.ValueOf(&cfg).Elem(), name)
			if set, ok := special[name]; ok {
				set(&cfg)
			} else {
				switch f.Kind() {
				case reflect.Struct:
					walk(f, name+".")
					continue
				case reflect.Int, reflect.Int64:
					f.SetInt(f.Int() + 1)
				case reflect.Uint64:
					f.SetUint(f.Uint() + 1)
				case reflect.Float64:
					f.SetFloat(0.125)
				case reflect.Bool:
					f.SetBool(!f.Bool())
				case reflect.Array:
					// Bounds.Counts: the slots of the kinds that keep
					// their bound there (plan.BudgetOf), each alone.
					for _, k := range plan.Counted() {
						if b := k.Budget(); b.Bound == nil {
							c := sim.DefaultConfig()
							*plan.BudgetOf(k).Bound(&c.Bounds)++
							text := FormatStory(c, "")
							got, err := ParseStory("story", text)
							if assert.NoError(t, err, "%s[%d]:\n%s", name, b.MixRank, text) {
								assert.Equal(t, c, got, "%s[%d] (%s) is not carried:\n%s", name, b.MixRank, b.Flag, text)
							}
						}
					}
					continue
				default:
					t.Errorf("%s: a %s knob the test cannot set: carry it in the story (simKnobs) or list it here", name, f.Kind())
					continue
				}
			}
			text := FormatStory(cfg, "")
			got, err := ParseStory("story", text)
			if assert.NoError(t, err, "%s:\n%s", name, text) {
				assert.Equal(t, cfg, got, "%s is not carried:\n%s", name, text)
			}
		}
	}
	walk(reflect.ValueOf(sim.DefaultConfig()), "")
}

// fieldByPath is the field of v named by a dotted path.
func fieldByPath(v reflect.Value, path string) reflect.Value {
	for _, p := range strings.Split(path, ".") {
		v = v.FieldByName(p)
	}
	return v
}

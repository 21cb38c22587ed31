package mutants

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/relaysim/relaysim/model"
)

// TestCatalog checks every catalog file without running anything: it
// parses, its name matches its file, its snippet occurs exactly once in
// the clean file, it names a known property and suite, and the mutated
// file still parses as Go. A stale mutant fails here, in plain go test,
// not an hour into the catalog run.
func TestCatalog(t *testing.T) {
	all, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 20 {
		t.Errorf("catalog has %d mutants, want at least 20", len(all))
	}
	for _, m := range all {
		t.Run(m.Name, func(t *testing.T) {
			if strings.Contains(m.Story, "\n") {
				t.Errorf("story is more than one line")
			}
			src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(m.File)))
			if err != nil {
				t.Fatal(err)
			}
			mutated, err := m.Mutate(src)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := parser.ParseFile(token.NewFileSet(), m.File, mutated, parser.SkipObjectResolution); err != nil {
				t.Errorf("mutated %s does not parse: %v", m.File, err)
			}
		})
	}
}

// Every property the oracle reports has a mutant that names it.
func TestCatalogCoversEveryProperty(t *testing.T) {
	all, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(slices.Clone(model.Properties), "determinism") {
		if !slices.ContainsFunc(all, func(m *Mutant) bool { return m.Property == p }) {
			t.Errorf("no mutant names %s", p)
		}
	}
	for _, mode := range SweepModes {
		if !slices.ContainsFunc(all, func(m *Mutant) bool { return slices.Contains(m.Modes, mode) }) {
			t.Errorf("no mutant names %s in its modes", mode)
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := "name: x\nstory: s\nfile: system/a.go\nproperty: no-loss\n-- find --\na\n-- replace --\nb\n"
	if _, err := Parse("x.txtar", []byte(good)); err != nil {
		t.Fatalf("good file: %v", err)
	}
	bad := map[string]string{
		"wrong file name":  good,
		"unknown property": strings.Replace(good, "no-loss", "no-lost", 1),
		"unknown key":      "colour: red\n" + good,
		"no replace":       strings.Replace(good, "-- replace --\nb\n", "", 1),
		"oracle file":      strings.Replace(good, "system/a.go", "model/loss.go", 1),
		"same snippet":     strings.Replace(good, "\nb\n", "\na\n", 1),
		"bad suite":        strings.Replace(good, "property", "suite: fuzz\nproperty", 1),
		"bad test suite":   strings.Replace(good, "property", "suite: test:./sim\nproperty", 1),
		"pseudo in sweep":  strings.Replace(good, "no-loss", "determinism", 1),
		"unknown mode":     strings.Replace(good, "property", "modes: both\nproperty", 1),
	}
	for why, text := range bad {
		name := "x.txtar"
		if why == "wrong file name" {
			name = "y.txtar"
		}
		if _, err := Parse(name, []byte(text)); err == nil {
			t.Errorf("%s: parsed without error", why)
		}
	}
}

func TestMutateNeedsExactlyOneMatch(t *testing.T) {
	m := &Mutant{Name: "x", File: "system/a.go", Find: "a++", Replace: "a--"}
	if _, err := m.Mutate([]byte("a++\na++\n")); err == nil {
		t.Error("two matches: want an error")
	}
	if _, err := m.Mutate([]byte("b++\n")); err == nil {
		t.Error("no match: want an error")
	}
	got, err := m.Mutate([]byte("x\na++\n"))
	if err != nil || string(got) != "x\na--\n" {
		t.Errorf("got %q, %v", got, err)
	}
}

// A go test suite (test:, rapid) is judged like a relaysim run: by its
// exit code and the result its tests wrote (proc.AddViolation). Its
// output, even a "violated:" line, decides nothing.
func TestJudgeGoTest(t *testing.T) {
	res := func(props ...string) *Summary {
		s := &Summary{Summary: "violation", Exit: 1, Command: "test", Violations: props}
		for _, p := range props {
			s.Evidence = append(s.Evidence, "violated: "+p+": room r1 seq 3: x")
		}
		return s
	}
	rapidLog := "    properties_test.go:9: \n        violated: no-loss: room r1: lost\n--- FAIL"
	cases := []struct {
		name, prop string
		o          Outcome
		want       string
	}{
		{"caught", "no-loss", Outcome{Output: rapidLog, Failed: true, Exit: 1, Summary: res("no-loss")}, "caught"},
		{"caught, second property", "exactly-once", Outcome{Failed: true, Exit: 1, Summary: res("no-loss", "exactly-once")}, "caught"},
		{"other property", "no-loss", Outcome{Failed: true, Exit: 1, Summary: res("exactly-once")}, "other:exactly-once"},
		{"a violated line without a result", "no-loss", Outcome{Output: rapidLog, Failed: true, Exit: 1}, "crash"},
		{"build error", "no-loss", Outcome{Output: "system/a.go:3:1: syntax error", Failed: true, BuildError: true}, "build-error"},
		{"panic", "no-loss", Outcome{Output: "panic: runtime error: index out of range\ngoroutine 1", Failed: true, Exit: 2}, "crash"},
		{"hang", "no-loss", Outcome{Failed: true, Exit: -1, TimedOut: true, Summary: res("no-loss")}, "crash"},
		{"a test failing outside every check", "no-loss", Outcome{Output: "--- FAIL: TestX\n    x_test.go:3: boom", Failed: true, Exit: 1}, "crash"},
		{"determinism", "determinism", Outcome{Output: "replayed differently", Failed: true, Exit: 1, Summary: res("determinism")}, "caught"},
		{"determinism test failing otherwise", "determinism", Outcome{Failed: true, Exit: 1, Summary: res("exactly-once")}, "other:exactly-once"},
	}
	for _, c := range cases {
		if got := Judge(c.prop, c.o).String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// A relaysim run is judged by its exit code and its summary line: the
// banner's text decides nothing, even when it names the property.
func TestJudgeRun(t *testing.T) {
	sum := func(class string, exit int, props string, errText string) string {
		return fmt.Sprintf(`{"summary":%q,"exit":%d,"command":"run","seed":"0x1","mode":"bulk","violations":[%s],"error":%q,"trace_hash":"ab"}`+"\ntrace-hash: ab\n", class, exit, props, errText)
	}
	banner := "violated: no-loss: room r1 seq 3: lost\n"
	cases := []struct {
		name, prop string
		o          Outcome
		want       string
	}{
		{"caught", "no-loss", Outcome{Output: banner + sum("violation", 1, `"no-loss"`, ""), Failed: true, Exit: 1}, "caught"},
		{"caught, second property", "exactly-once", Outcome{Output: sum("violation", 1, `"no-loss","exactly-once"`, ""), Failed: true, Exit: 1}, "caught"},
		{"other property", "exactly-once", Outcome{Output: banner + sum("violation", 1, `"no-loss"`, ""), Failed: true, Exit: 1}, "other:no-loss"},
		{"banner text alone names nothing", "no-loss", Outcome{Output: banner + sum("violation", 1, `"exactly-once"`, ""), Failed: true, Exit: 1}, "other:exactly-once"},
		{"passed", "no-loss", Outcome{Output: sum("ok", 0, "", "")}, "survived"},
		{"harness error", "no-loss", Outcome{Output: sum("harness-error", 3, "", "bubble: deadlock"), Failed: true, Exit: 3}, "crash"},
		{"died without a summary", "no-loss", Outcome{Output: banner + "panic: boom\ngoroutine 1", Failed: true, Exit: 2}, "crash"},
		{"summary disagrees with the exit code", "no-loss", Outcome{Output: sum("violation", 1, `"no-loss"`, ""), Failed: true, Exit: 2}, "crash"},
		{"hung", "no-loss", Outcome{Output: banner, Failed: true, Exit: -1, TimedOut: true}, "crash"},
	}
	for _, c := range cases {
		c.o = withResult(c.o)
		if got := Judge(c.prop, c.o); got.String() != c.want {
			t.Errorf("%s: got %s (%s), want %s", c.name, got, got.Evidence, c.want)
		}
	}
}

func TestParseSummary(t *testing.T) {
	out := "result: FAIL\n" + `{"summary":"violation","exit":1,"violations":["a"],"trace_hash":"x"}` + "\n" +
		`{"summary":"violation","exit":1,"violations":["b","c"],"trace_hash":"y"}` + "\ntrace-hash: y\n"
	s, ok := ParseSummary(out)
	if !ok || s.TraceHash != "y" || strings.Join(s.Violations, ",") != "b,c" {
		t.Errorf("got %+v, %v; want the last line's", s, ok)
	}
	if _, ok := ParseSummary("panic: boom\n"); ok {
		t.Error("no summary line: want false")
	}
}

func TestSelect(t *testing.T) {
	var all []*Mutant
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		all = append(all, &Mutant{Name: n})
	}
	names := func(ms []*Mutant) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Name)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		only   []string
		rotate string
		want   string
	}{
		{nil, "", "a,b,c,d,e"},
		{nil, "1/2", "a,c,e"},
		{nil, "2/2", "b,d"},
		{[]string{"d", "b"}, "", "d,b"},
	} {
		got, err := Select(all, c.only, c.rotate)
		if err != nil || names(got) != c.want {
			t.Errorf("Select(%v, %q) = %s, %v; want %s", c.only, c.rotate, names(got), err, c.want)
		}
	}
	for _, bad := range []string{"0/2", "3/2", "x", "1/0"} {
		if _, err := Select(all, nil, bad); err == nil {
			t.Errorf("rotate %q: want an error", bad)
		}
	}
	if _, err := Select(all, []string{"zz"}, ""); err == nil {
		t.Error("unknown name: want an error")
	}
}

// The overlay adds a file to the mutated package that names the overlay,
// so that every binary built with the mutant prints replay commands that
// build it again (cmd/relaysim goRun reads OverlayEnv).
func TestApplyAddsTheOverlayNote(t *testing.T) {
	root := t.TempDir()
	require := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	require(os.MkdirAll(filepath.Join(root, "system"), 0o755))
	orig := filepath.Join(root, "system", "a.go")
	require(os.WriteFile(orig, []byte("package system\n\nfunc f() int { return 1 }\n"), 0o644))
	m := &Mutant{Name: "apply-test-" + filepath.Base(root), File: "system/a.go", Find: "return 1", Replace: "return 2"}
	t.Cleanup(func() { os.RemoveAll(Dir(m.Name)) })
	overlay, err := Apply(root, m)
	require(err)
	js, err := os.ReadFile(overlay)
	require(err)
	var o struct{ Replace map[string]string }
	require(json.Unmarshal(js, &o))
	note := filepath.Join(root, "system", "zz_mutant_overlay.go")
	if len(o.Replace) != 2 || o.Replace[orig] == "" || o.Replace[note] == "" {
		t.Fatalf("overlay %s: want the mutated file and %s", js, note)
	}
	src, err := os.ReadFile(o.Replace[note])
	require(err)
	f, err := parser.ParseFile(token.NewFileSet(), note, src, 0)
	require(err)
	if f.Name.Name != "system" || !strings.Contains(string(src), fmt.Sprintf("os.Setenv(%q, %q)", OverlayEnv, overlay)) {
		t.Errorf("added file:\n%s", src)
	}
}

// The explore suite: parsing its args, and the command lines it runs.
func TestExploreSuite(t *testing.T) {
	good := "name: x\nstory: s\nfile: system/a.go\nproperty: no-loss\nsuite: explore\nargs: -scenario mutants/stories/s.txt -crashes 1\n-- find --\na\n-- replace --\nb\n"
	m, err := Parse("x.txtar", []byte(good))
	if err != nil {
		t.Fatalf("good file: %v", err)
	}
	jobs := m.ExploreJobs("/tmp/x")
	if len(jobs) != 1 || strings.Join(jobs[0], " ") != "explore -scenario mutants/stories/s.txt -crashes 1 -first -out /tmp/x" {
		t.Errorf("jobs %q", jobs)
	}
	withModes := strings.Replace(good, "suite:", "modes: bulk stream\nsuite:", 1)
	if m, err = Parse("x.txtar", []byte(withModes)); err != nil {
		t.Fatalf("modes: %v", err)
	}
	jobs = m.ExploreJobs("d")
	if len(jobs) != 2 || strings.Join(jobs[1], " ") != "explore -scenario mutants/stories/s.txt -crashes 1 -mode stream -first -out d" {
		t.Errorf("jobs with modes %q", jobs)
	}
	if m, err = Parse("x.txtar", []byte(strings.Replace(good, "-scenario mutants/stories/s.txt", "-story=send-races-leave", 1))); err != nil {
		t.Errorf("-story=NAME: %v", err)
	}
	bad := map[string]string{
		"no story":          strings.Replace(good, "-scenario mutants/stories/s.txt ", "", 1),
		"two stories":       strings.Replace(good, "args: ", "args: -story two-senders ", 1),
		"story no value":    strings.Replace(good, "-scenario mutants/stories/s.txt -crashes 1", "-crashes 1 -scenario", 1),
		"suite's own flag":  strings.Replace(good, "-crashes 1", "-first", 1),
		"a schedule":        strings.Replace(good, "-crashes 1", "-schedule f", 1),
		"mode and modes":    strings.Replace(withModes, "-crashes 1", "-mode single", 1),
		"unknown property":  strings.Replace(good, "no-loss", "no-lost", 1),
		"pseudo property":   strings.Replace(good, "no-loss", "determinism", 1),
		"explore with typo": strings.Replace(good, "suite: explore", "suite: explorer", 1),
	}
	for why, text := range bad {
		if _, err := Parse("x.txtar", []byte(text)); err == nil {
			t.Errorf("%s: parsed without error", why)
		}
	}
}

// withResult makes o a relaysim run's outcome whose typed result is the
// summary line in its output (none when there is none), as the child
// would have written it to its result file.
func withResult(o Outcome) Outcome {
	if s, ok := ParseSummary(o.Output); ok {
		o.Summary = &s
	}
	return o
}

// The typed result decides, not the output: a summary line printed but
// not written as the result is no verdict, and the evidence quoted is
// the result's.
func TestJudgeRunReadsTheResult(t *testing.T) {
	line := `{"summary":"violation","exit":1,"violations":["no-loss"],"trace_hash":"ab"}` + "\n"
	o := Outcome{Output: "violated: no-loss: printed\n" + line, Failed: true, Exit: 1}
	if got := Judge("no-loss", o); got.Kind != Crash {
		t.Errorf("no result: got %s (%s), want crash", got, got.Evidence)
	}
	o.Summary = &Summary{Summary: "violation", Exit: 1, Violations: []string{"no-loss"}, Evidence: []string{"error:  x", "violated: no-loss: room r1 seq 3: lost"}}
	got := Judge("no-loss", o)
	if got.Kind != Caught || got.Evidence != "violated: no-loss: room r1 seq 3: lost" {
		t.Errorf("got %s (%s), want caught with the result's evidence", got, got.Evidence)
	}
}

// An explore run is judged by its exit code and summary line like run's:
// caught only when it exits 1 naming the property.
func TestJudgeExplore(t *testing.T) {
	line := func(class string, exit int, props ...string) string {
		js, _ := json.Marshal(Summary{Summary: class, Exit: exit, Command: "explore", Violations: props, Schedules: 40, Exhausted: exit == 0, FirstViolation: 17})
		return "== story\nFAILED: ...\n" + string(js) + "\nexplore: 40 schedules, terminal states bulk=3, exhausted=no, violations=1\n"
	}
	cases := []struct {
		name string
		o    Outcome
		want string
	}{
		{"caught", Outcome{Output: line("violation", 1, "no-loss"), Failed: true, Exit: 1}, Caught},
		{"other", Outcome{Output: line("violation", 1, "exactly-once"), Failed: true, Exit: 1}, "other:exactly-once"},
		{"exhausted", Outcome{Output: line("ok", 0)}, Survived},
		{"harness", Outcome{Output: line("harness-error", 3), Failed: true, Exit: 3}, Crash},
		{"usage", Outcome{Output: "relaysim explore: no flag -x\n", Failed: true, Exit: 2}, Crash},
	}
	for _, c := range cases {
		if got := Judge("no-loss", withResult(c.o)); got.String() != c.want {
			t.Errorf("%s: got %s (%s), want %s", c.name, got, got.Evidence, c.want)
		}
	}
	s, ok := ParseSummary(line("violation", 1, "no-loss"))
	if !ok || s.Schedules != 40 || s.FirstViolation != 17 || s.Command != "explore" {
		t.Errorf("summary %+v, %v", s, ok)
	}
}

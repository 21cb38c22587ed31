package relaysim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The commands README.md and docs/*.md tell a user to paste are tested, so
// that the docs cannot go stale: by default every one must parse (its
// command exists, its flags exist and take the values shown, a -mutant
// names a catalog mutant), and the README's first command, pasted as
// documented, must exit 0 and print a trace hash (and a bad seed must exit
// 2 through go tool). With -docs.run (make docs-check; .ci/run) every
// command that is not on the long list below runs for real: its exit code
// must be the one its "# exit N" comment says (else 0), and an output
// block right after it that shows a trace hash or a JSON summary line must
// match what it printed.

var docsRun = flag.Bool("docs.run", false, "run the docs' commands for real and check their exit codes and shown outputs (minutes: make docs-check, .ci/run)")

// docCommand is one command a doc tells a user to paste.
type docCommand struct {
	file string
	line int
	text string   // as written, comment and continuation lines folded
	args []string // after "go tool relaysim"
	exit int      // "# exit N", else 0
	// shown is the output block after the command's block, if any.
	shown []string
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

// notRun are the commands -docs.run leaves to CI's own steps or to a
// user's files, with why (a prefix of the args).
var notRun = map[string]string{
	"sweep -seeds 1-200":                 "a 200-seed sweep is ~26 min on 2 cores; .ci/run runs its own sweep",
	"sweep -seeds 1-1000":                "a long sweep shard; .ci/run runs its own sweep",
	"mutants":                            "the catalog: .ci/run runs every mutant",
	"report all":                         "every experiment at full length (~18 min)",
	"real":                               "needs redis-server and real processes: .ci/run runs a real cluster",
	"check -history /tmp/":               "judges a real run's history (docs/real-cluster.md)",
	"explore -scenario my-":              "a user's own story file",
	"junit-merge":                        "needs a sharded sweep's JUnit files",
	"explore -story two-senders":         "the naive search for comparison: 30 s of wall time by design",
	"run -seed 0x2a -mode bulk -cover":   "builds the runner with coverage (a minute or two cold): the -cover-builds tests run it",
	"sweep -seeds 1-4 -mode bulk -shard": "builds the runner with coverage: the -cover-builds tests run the shards",
	"cover out/cover-shards":             "merges the shards above: the -cover-builds tests merge theirs",
	"guide -corpus out/guided":           "a guided search of 300 runs (minutes); its tests run it on a fake worker",
}

// docCommands extracts the commands from README.md and docs/*.md: lines of
// fenced blocks (not Go) that start with "go tool relaysim".
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	for _, f := range append([]string{"README.md"}, files...) {
		out = append(out, commandsOf(t, f)...)
	}
	shown := 0
	for _, c := range out {
		if len(c.shown) > 0 {
			shown++
		}
	}
	if len(out) < 20 || shown == 0 {
		t.Fatalf("found only %d doc commands, %d with a shown output: is the extraction broken?", len(out), shown)
	}
	return out
}

// fenced is one fenced block of a markdown file.
type fenced struct {
	lang  string
	start int // the line of its opening fence
	end   int // the line of its closing fence
	lines []string
}

func blocksOf(t *testing.T, file string) []fenced {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []fenced
	var cur *fenced
	for n, line := range strings.Split(string(b), "\n") {
		fence, isFence := strings.CutPrefix(strings.TrimSpace(line), "```")
		switch {
		case isFence && cur == nil:
			cur = &fenced{lang: fence, start: n + 1}
		case isFence:
			cur.end = n + 1
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return out
}

func commandsOf(t *testing.T, file string) []docCommand {
	blocks := blocksOf(t, file)
	var out []docCommand
	for k, b := range blocks {
		if b.lang == "go" {
			continue
		}
		var cmds []docCommand
		cont, contLine := "", 0
		for i, line := range b.lines {
			text := strings.TrimSpace(line)
			if cont != "" {
				text, cont = cont+" "+text, ""
			} else {
				contLine = b.start + 1 + i
			}
			if strings.HasSuffix(text, `\`) {
				cont = strings.TrimSpace(strings.TrimSuffix(text, `\`))
				continue
			}
			for _, part := range strings.Split(text, " && ") {
				if c, ok := parseDocCommand(t, file, contLine, strings.TrimSpace(part)); ok {
					cmds = append(cmds, c)
				}
			}
		}
		// A plain block at most a few lines after a command block is
		// its last command's output.
		if len(cmds) > 0 && k+1 < len(blocks) {
			next := blocks[k+1]
			if next.lang == "" && !hasCommand(next.lines) && next.start-b.end <= 4 {
				cmds[len(cmds)-1].shown = next.lines
			}
		}
		out = append(out, cmds...)
	}
	return out
}

func hasCommand(block []string) bool {
	return slices.ContainsFunc(block, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "go tool relaysim ") })
}

// parseDocCommand reads "go tool relaysim ARGS # exit N, ...".
func parseDocCommand(t *testing.T, file string, line int, text string) (docCommand, bool) {
	rest, ok := strings.CutPrefix(text, "go tool relaysim ")
	if !ok {
		return docCommand{}, false
	}
	c := docCommand{file: file, line: line, text: text}
	if i := strings.Index(rest, " #"); i >= 0 {
		comment := rest[i+2:]
		rest = rest[:i]
		if e, ok := strings.CutPrefix(strings.TrimSpace(comment), "exit "); ok {
			code, err := strconv.Atoi(strings.Fields(e)[0])
			if err != nil {
				t.Fatalf("%s:%d: bad exit comment %q", file, line, comment)
			}
			c.exit = code
		}
	}
	for _, f := range strings.Fields(rest) {
		c.args = append(c.args, strings.Trim(f, `'`))
	}
	return c, true
}

// buildRelaysim builds the runner once for the docs tests.
func buildRelaysim(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "relaysim")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/relaysim").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/relaysim: %v\n%s", err, out)
	}
	return bin
}

// exitOf runs cmd and returns its exit code and output.
func exitOf(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("%v: %v", cmd.Args, err)
	return 0, "", ""
}

// withHelp is args with -h where the command's flag parsing meets it:
// after the flags, before any file arguments.
func withHelp(args []string) []string {
	if args[0] == "junit-merge" {
		for i := 1; i < len(args); i++ {
			if !strings.HasPrefix(args[i], "-") {
				return slices.Concat(args[:i:i], []string{"-h"}, args[i:])
			}
			if args[i] == "-o" {
				i++
			}
		}
	}
	return append(slices.Clone(args), "-h")
}

// Every documented command parses: relaysim answers its -h with exit 0,
// which it does only when every flag before it exists and takes the
// value shown.
func TestDocCommandsParse(t *testing.T) {
	bin := buildRelaysim(t)
	for _, c := range docCommands(t) {
		code, stdout, stderr := exitOf(t, exec.Command(bin, withHelp(c.args)...))
		if code != 0 || !strings.HasPrefix(stdout, "usage: relaysim ") {
			t.Errorf("%s\n  does not parse: exit %d: %s", c, code, strings.TrimSpace(stderr))
		}
	}
}

// The README's first command is the main job: pasted as documented (go
// tool, which keeps exit codes), it exits 0 and ends with the trace hash;
// a typo in it exits 2, not go run's 1.
func TestReadmeMainJobAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the main job")
	}
	cmds := commandsOf(t, "README.md")
	if got := strings.Join(cmds[0].args, " "); got != "run -seed 0x2a -mode bulk" {
		t.Fatalf("the README's first command is %q", got)
	}
	code, out, stderr := exitOf(t, exec.Command("go", append([]string{"tool", "relaysim"}, cmds[0].args...)...))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "trace-hash: ") {
		t.Errorf("go tool relaysim %v: exit %d, last line %q\n%s", cmds[0].args, code, lines[len(lines)-1], stderr)
	}
	code, _, stderr = exitOf(t, exec.Command("go", "tool", "relaysim", "run", "-seed", "zz"))
	if code != 2 {
		t.Errorf("go tool relaysim run -seed zz: exit %d, want 2 (%s)", code, stderr)
	}
}

// With -docs.run, every documented command not on the long list runs from
// the repository's root: its exit code is the one documented, and the
// output block shown after it (a trace hash, a JSON summary line) is what
// it printed. Files the commands write are removed again.
func TestDocCommandsRun(t *testing.T) {
	if !*docsRun {
		t.Skip("runs every documented command: -docs.run (make docs-check; .ci/run)")
	}
	bin := buildRelaysim(t)
	before := rootEntries(t)
	defer func() {
		for _, e := range rootEntries(t) {
			if !slices.Contains(before, e) {
				os.RemoveAll(e)
			}
		}
	}()
	ran := map[string]bool{}
	for _, c := range docCommands(t) {
		key := strings.Join(c.args, " ")
		if why := skipReason(c.args); why != "" {
			t.Logf("not run: %s (%s)", c, why)
			continue
		}
		if ran[key] && len(c.shown) == 0 {
			continue
		}
		ran[key] = true
		cmd := exec.Command(bin, c.args...)
		code, out, stderr := exitOf(t, cmd)
		if code != c.exit {
			t.Errorf("%s\n  exit %d, the doc says %d\n%s", c, code, c.exit, tail(out+stderr, 15))
			continue
		}
		checkShown(t, c, out)
	}
}

func skipReason(args []string) string {
	line := strings.Join(args, " ")
	for prefix, why := range notRun {
		if strings.HasPrefix(line, prefix) {
			return why
		}
	}
	return ""
}

// checkShown compares the stable parts of a shown output block with what
// the command printed: "trace-hash: " lines, and every field a shown JSON
// summary line has.
func checkShown(t *testing.T, c docCommand, out string) {
	t.Helper()
	for _, want := range c.shown {
		want = strings.TrimSpace(want)
		switch {
		case strings.HasPrefix(want, "trace-hash: "):
			if !strings.Contains(out, want+"\n") {
				t.Errorf("%s\n  shows %q; it printed %q", c, want, lastLine(out))
			}
		case strings.HasPrefix(want, `{"summary":`):
			var shown, got map[string]any
			if err := json.Unmarshal([]byte(want), &shown); err != nil {
				t.Errorf("%s: the shown summary line is not JSON: %v", c, err)
				continue
			}
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, `{"summary":`) {
					line = l
				}
			}
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Errorf("%s: printed no JSON summary line: %q", c, line)
				continue
			}
			for k, v := range shown {
				if fmt.Sprint(v) != fmt.Sprint(got[k]) {
					t.Errorf("%s\n  shows %s=%v, printed %v", c, k, v, got[k])
				}
			}
		}
	}
}

func rootEntries(t *testing.T) []string {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

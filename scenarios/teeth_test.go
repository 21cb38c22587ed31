package scenarios

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var teethFlag = flag.Bool("teeth", false, "run the mutant catalog: each mutant must be caught (slow; make teeth)")

// mutant is a realistic relay bug, applied at build time with
// `go test -overlay` so the production code stays clean. Each mutant names
// the test that must catch it.
type mutant struct {
	name          string
	file          string // relative to the module root
	find, replace string // find must occur exactly once
	pkg, run      string // the catching test
	args          []string
}

var catalog = []mutant{
	{
		name: "no-dedup",
		file: "system/session.go",
		find: "if d.Seq <= last {\n\t\treturn nil // duplicate", replace: "if d.Seq <= last {\n\t\treturn s.pushLocked(d) // duplicate",
		pkg: "./scenarios", run: "TestRelayProperties",
	},
	{
		name: "gap-not-filled",
		file: "system/session.go",
		find: "if known && d.Seq == last+1 {", replace: "if known {",
		pkg: "./scenarios", run: "TestRelayProperties",
	},
	{
		name: "stream-not-closed-on-vanish",
		file: "system/node.go",
		find: "Time:    n.cfg.StreamKeepAlive,", replace: "Time:    1000 * time.Hour,",
		pkg: "./scenarios", run: "TestRelayProperties",
	},
	{
		name: "goroutine-leak-on-start",
		file: "system/node.go",
		find: "func (n *Node) Start(ctx context.Context) error {\n", replace: "func (n *Node) Start(ctx context.Context) error {\n\tgo func() { <-make(chan struct{}) }()\n",
		pkg: "./scenarios", run: "TestRelaySeeds/bulk", args: []string{"-seeds=2"},
	},
	{
		name: "map-order-grouping",
		file: "system/fanout.go",
		find: "sort.Slice(out, func(i, j int) bool { return out[i].server < out[j].server })", replace: "_ = sort.Slice",
		pkg: "./sim", run: "TestDeterminismSameSeedSameTrace/bulk", args: []string{"-short"},
	},
}

// TestTeeth builds the suite against each mutant and requires the catching
// test to fail. It reports, per mutant: caught or not, seconds to the
// failure, and the size of rapid's shrunk case.
func TestTeeth(t *testing.T) {
	if !*teethFlag {
		t.Skip("the mutant catalog runs with -teeth (make teeth)")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var report []string
	for _, m := range catalog {
		t.Run(m.name, func(t *testing.T) {
			overlay := writeOverlay(t, root, m)
			start := time.Now()
			out, caught := runMutant(t, root, overlay, m)
			secs := time.Since(start).Seconds()
			steps := len(regexp.MustCompile(`\[rapid\] draw action: `).FindAllString(out, -1))
			line := fmt.Sprintf("%-28s caught=%-5v %6.1fs shrunk-actions=%d", m.name, caught, secs, steps)
			report = append(report, line)
			if !caught {
				t.Errorf("mutant %s survived: %s -run %s passed against it", m.name, m.pkg, m.run)
			}
			t.Logf("%s\nreplay: go test -overlay=%s %s -run '%s' %s", line, overlay, m.pkg, m.run, strings.Join(m.args, " "))
		})
	}
	t.Logf("teeth report:\n%s", strings.Join(report, "\n"))
}

// writeOverlay writes the mutated file and the overlay that swaps it in.
func writeOverlay(t *testing.T, root string, m mutant) string {
	t.Helper()
	orig := filepath.Join(root, m.file)
	src, err := os.ReadFile(orig)
	require.NoError(t, err)
	n := strings.Count(string(src), m.find)
	require.Equal(t, 1, n, "mutant %s is stale: %q occurs %d times in %s", m.name, m.find, n, m.file)
	dir := t.TempDir()
	mutated := filepath.Join(dir, filepath.Base(m.file))
	require.NoError(t, os.WriteFile(mutated, []byte(strings.Replace(string(src), m.find, m.replace, 1)), 0o644))
	js, err := json.Marshal(map[string]map[string]string{"Replace": {orig: mutated}})
	require.NoError(t, err)
	overlay := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlay, js, 0o644))
	return overlay
}

func runMutant(t *testing.T, root, overlay string, m mutant) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append([]string{"test", "-overlay=" + overlay, "-count=1", m.pkg, "-run", m.run, "-rapid.nofailfile"}, m.args...)
	if m.pkg != "./scenarios" {
		args = append([]string{"test", "-overlay=" + overlay, "-count=1", m.pkg, "-run", m.run}, m.args...)
	}
	return goTest(ctx, root, overlay, args...)
}

func goTest(ctx context.Context, root, overlay string, args ...string) (string, bool) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "RELAYSIM_OVERLAY="+overlay)
	out, err := cmd.CombinedOutput()
	return string(out), err != nil && strings.Contains(string(out), "--- FAIL")
}

var (
	replayRe = regexp.MustCompile(`replay:\s+(go test -overlay=\S+ \./scenarios -run '([^']+)' -seed=(\S+))`)
	hashRe   = regexp.MustCompile(`trace-hash (\w+)`)
)

// A broken variant caught by the seed sweep prints a banner whose replay
// command, pasted, fails the same way with the same trace hash.
func TestTeethReplayCommand(t *testing.T) {
	if !*teethFlag {
		t.Skip("runs with -teeth (make teeth)")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	m := catalog[1] // gap-not-filled
	overlay := writeOverlay(t, root, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, caught := goTest(ctx, root, overlay, "test", "-overlay="+overlay, "-count=1", "./scenarios", "-run", "TestRelaySeeds/bulk", "-seeds=40", "-failfast")
	require.True(t, caught, "the seed sweep did not catch %s:\n%s", m.name, out)
	cmdm, hash := replayRe.FindStringSubmatch(out), hashRe.FindStringSubmatch(out)
	require.NotNil(t, cmdm, "no replay command in:\n%s", out)
	require.NotNil(t, hash)
	t.Logf("banner says: %s (trace-hash %s)", cmdm[1], hash[1])
	again, failed := goTest(ctx, root, overlay, "test", "-overlay="+overlay, "-count=1", "./scenarios", "-run", cmdm[2], "-seed="+cmdm[3])
	require.True(t, failed, "the pasted replay command passed:\n%s", again)
	require.Contains(t, again, "trace-hash "+hash[1], "the replay ran differently")
}

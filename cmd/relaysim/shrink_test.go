package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/mutants"
)

// A catalog mutant, built with its overlay as the harness builds it,
// shrinks from the seed the sweep catches it at to a few actions and no
// fault, failing on the property the catalog names; the printed replay
// (the shrink command, with the overlay) is what a developer pastes.
func TestShrinkACatalogMutant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a mutant and shrinks a seed (~70 runs)")
	}
	// The mutant's files go under the test's own directory: another
	// checkout applying the same mutant in the shared one would point the
	// overlay at its files.
	t.Setenv("TMPDIR", t.TempDir())
	bin, overlay := buildMutant(t, "gap-not-filled")

	// The failing run's banner names the shrink command, overlay included.
	run, _ := exec.Command(bin, "run", "-seed", "0x1", "-mode", "single").Output()
	assert.Contains(t, string(run), "shrink:  go tool -overlay="+overlay+" relaysim shrink -seed 0x1 -mode single\n")

	story := filepath.Join(t.TempDir(), "gap.txt")
	cmd := exec.Command(bin, "shrink", "-seed", "0x1", "-mode", "single", "-max-runs", "300", "-o", story)
	cmd.Env = append(os.Environ(), mutants.OverlayEnv+"=") // the binary sets it itself
	b, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a shrunk failure exits 1:\n%s", b)
	require.Equal(t, 1, exit.ExitCode(), "%s", b)
	got := string(b)
	assert.Contains(t, got, "property=per-room-ordering")
	assert.Contains(t, got, "violated: per-room-ordering: ")
	assert.Contains(t, got, "replay:  go tool -overlay="+overlay+" relaysim replay -story "+story+"\n")
	before, after := sizes(t, got, "before:"), sizes(t, got, "after:")
	t.Logf("before %v after %v", before, after)
	assert.Less(t, after["actions"], before["actions"])
	assert.LessOrEqual(t, after["actions"], 12, "the issue's target")
	assert.LessOrEqual(t, after["faults"], 2, "the issue's target")
	assert.Less(t, after["trace-lines"], before["trace-lines"]/10)

	// The story replays the shrunk run: the same failure, the same hash.
	text, err := os.ReadFile(story)
	require.NoError(t, err)
	assert.Contains(t, string(text), "# Shrunk by: go tool -overlay="+overlay+" relaysim shrink -seed 0x1 -mode single -max-runs=300\n")
	replayed, err := exec.Command(bin, "replay", "-story", story).Output()
	require.ErrorAs(t, err, &exit, "the story fails while the bug is there:\n%s", replayed)
	assert.Contains(t, string(replayed), "violated: per-room-ordering: ")
	assert.Equal(t, lastLineOf(got), lastLineOf(string(replayed)), "the same trace hash")
}

// A run that leaves goroutines behind ends the process that runs it
// (synctest aborts it), so its shrink runs every candidate in a child
// process: chosen by itself here (no -property: the seed's run, played
// once in a child, leaks). The mutant goroutine-leak-on-start shrinks to
// a story that fails on no-goroutine-leaks under the overlay and passes
// on main; the same seed shrinks to the same story again; and an
// in-process shrink (-isolate=false) stops with one line saying why.
func TestShrinkIsolatedGoroutineLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a mutant and shrinks a seed in ~20 child processes")
	}
	t.Setenv("TMPDIR", t.TempDir()) // as TestShrinkACatalogMutant
	bin, overlay := buildMutant(t, "goroutine-leak-on-start")
	clean := buildRunner(t)
	dir := t.TempDir()
	shrink := func(story string, extra ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"shrink", "-seed", "0x1", "-mode", "bulk", "-max-runs", "100", "-o", story}, extra...)...)
		cmd.Env = append(os.Environ(), mutants.OverlayEnv+"=")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		return string(b), stderr.String(), code
	}

	story := filepath.Join(dir, "leak.txt")
	got, errOut, code := shrink(story, "-v")
	require.Equal(t, 1, code, "a shrunk failure exits 1:\n%s\n%s", got, errOut)
	assert.Contains(t, errOut, "shrink: every run in a child process (-isolate)\n")
	assert.Contains(t, got, "property=no-goroutine-leaks")
	assert.Contains(t, got, "violated: no-goroutine-leaks: ")
	assert.Contains(t, got, `"command":"shrink"`)
	assert.Contains(t, got, "replay:  go tool -overlay="+overlay+" relaysim replay -story "+story+"\n")
	before, after := sizes(t, got, "before:"), sizes(t, got, "after:")
	t.Logf("before %v after %v", before, after)
	assert.LessOrEqual(t, after["actions"], 2)
	assert.Equal(t, 0, after["faults"])
	assert.Equal(t, 1, after["nodes"])
	assert.Positive(t, after["trace-lines"], "the child reports its trace's length")
	assert.Less(t, after["trace-lines"], before["trace-lines"]/10)

	// The story fails on the property under the overlay, with the
	// shrunk run's hash, and passes on main.
	replayed, err := exec.Command(bin, "replay", "-story", story).Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the story fails while the bug is there:\n%s", replayed)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(replayed), "violated: no-goroutine-leaks: ")
	assert.Equal(t, lastLineOf(got), lastLineOf(string(replayed)), "the same trace hash")
	onMain, err := exec.Command(clean, "replay", "-story", story).Output()
	require.NoError(t, err, "the story passes on main:\n%s", onMain)

	// The same seed shrinks to the same story.
	again := filepath.Join(dir, "again.txt")
	_, _, code = shrink(again)
	require.Equal(t, 1, code)
	a, err := os.ReadFile(story)
	require.NoError(t, err)
	b, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))

	// In-process, the first run that leaks ends the shrink: one line.
	_, errOut, code = shrink(filepath.Join(dir, "inproc.txt"), "-isolate=false")
	assert.Equal(t, exitHarness, code)
	assert.Equal(t, "relaysim shrink: a run left goroutines behind after teardown (no-goroutine-leaks), which ends this process: shrink again with -isolate\n", errOut)
}

// A mutant that only mode equivalence catches (bulk-rejects-colon: each
// mode's calm run holds on its own) shrinks with -equiv to a two-mode
// story, ending with equiv: replayed, it runs every mode and fails on
// mode-equivalence under the overlay, with the shrunk runs' hashes, and
// passes on main. So does the story of it committed in
// scenarios/testdata/shrunk.
func TestShrinkEquivWritesATwoModeStory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a mutant and shrinks a seed's calm runs (~30 x 3 runs)")
	}
	t.Setenv("TMPDIR", t.TempDir()) // as TestShrinkACatalogMutant
	bin, overlay := buildMutant(t, "bulk-rejects-colon")
	clean := buildRunner(t)
	story := filepath.Join(t.TempDir(), "colon.txt")
	cmd := exec.Command(bin, "shrink", "-seed", "0x1", "-equiv", "-property", "mode-equivalence", "-max-runs", "100", "-o", story)
	cmd.Env = append(os.Environ(), mutants.OverlayEnv+"=")
	b, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a shrunk failure exits 1:\n%s", b)
	got := string(b)
	assert.Contains(t, got, "replay:  go tool -overlay="+overlay+" relaysim replay -story "+story+"\n")
	t.Logf("after %v", sizes(t, got, "after:"))
	text, err := os.ReadFile(story)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(text), "\nequiv\n----\nok\n"), "the two-mode form:\n%s", text)
	assert.Contains(t, string(text), " calm ", "the calm variant, as equiv runs it")

	for _, path := range []string{story, "../../scenarios/testdata/shrunk/equiv-bulk-rejects-colon.txt"} {
		replayed, err := exec.Command(bin, "replay", "-story", path).Output()
		require.ErrorAs(t, err, &exit, "%s fails while the bug is there:\n%s", path, replayed)
		assert.Equal(t, 1, exit.ExitCode())
		assert.Contains(t, string(replayed), "mode equivalence FAILED for story "+path+": ")
		assert.Contains(t, string(replayed), "violated: mode-equivalence: ")
		assert.Contains(t, string(replayed), `"mode":"all","violations":["mode-equivalence"]`)
		if path == story {
			assert.Equal(t, lastLineOf(got), lastLineOf(string(replayed)), "the shrunk runs' hashes")
		}
		onMain, err := exec.Command(clean, "replay", "-story", path).Output()
		require.NoError(t, err, "%s passes on main:\n%s", path, onMain)
		assert.Contains(t, string(onMain), `"summary":"ok"`)
	}
}

// sizes reads the "key=N" pairs of the output line that starts with
// prefix.
func sizes(t *testing.T, out, prefix string) map[string]int {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		m := map[string]int{}
		for _, kv := range regexp.MustCompile(`([a-z-]+)=(\d+)`).FindAllStringSubmatch(l, -1) {
			m[kv[1]], _ = strconv.Atoi(kv[2])
		}
		return m
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
	return nil
}

// A failing run's banner prints the shrink command beside the replay
// command, with the same build and flags.
func TestShrinkOfReplay(t *testing.T) {
	for _, tc := range []struct{ replay, want string }{
		{"go tool relaysim replay -seed 0x2 -mode bulk -users=5 -trace trace.txt", "go tool relaysim shrink -seed 0x2 -mode bulk -users=5"},
		{"go tool -overlay=/tmp/o.json relaysim replay -seed 0x1 -mode single -trace trace.txt", "go tool -overlay=/tmp/o.json relaysim shrink -seed 0x1 -mode single"},
		{"go tool relaysim equiv -seed 0x9", "go tool relaysim shrink -equiv -seed 0x9"},
	} {
		assert.Equal(t, tc.want, shrinkOf(tc.replay))
	}
}

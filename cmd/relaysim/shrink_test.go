package main

import (
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
	all, err := mutants.Catalog()
	require.NoError(t, err)
	ms, err := mutants.Select(all, []string{"gap-not-filled"}, "")
	require.NoError(t, err)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	// The mutant's files go under the test's own directory: another
	// checkout applying the same mutant in the shared one would point the
	// overlay at its files.
	t.Setenv("TMPDIR", t.TempDir())
	overlay, err := mutants.Apply(root, ms[0])
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "relaysim")
	out, err := exec.Command("go", "build", "-overlay="+overlay, "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The failing run's banner names the shrink command, overlay included.
	run, _ := exec.Command(bin, "run", "-seed", "0x1", "-mode", "single").Output()
	assert.Contains(t, string(run), "shrink:  go run -overlay="+overlay+" ./cmd/relaysim shrink -seed 0x1 -mode single\n")

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
	assert.Contains(t, got, "replay:  go run -overlay="+overlay+" ./cmd/relaysim replay -story "+story+"\n")
	before, after := sizes(t, got, "before:"), sizes(t, got, "after:")
	t.Logf("before %v after %v", before, after)
	assert.Less(t, after["actions"], before["actions"])
	assert.LessOrEqual(t, after["actions"], 12, "the issue's target")
	assert.LessOrEqual(t, after["faults"], 2, "the issue's target")
	assert.Less(t, after["trace-lines"], before["trace-lines"]/10)

	// The story replays the shrunk run: the same failure, the same hash.
	text, err := os.ReadFile(story)
	require.NoError(t, err)
	assert.Contains(t, string(text), "# Shrunk by: go run -overlay="+overlay+" ./cmd/relaysim shrink -seed 0x1 -mode single -max-runs=300\n")
	replayed, err := exec.Command(bin, "replay", "-story", story).Output()
	require.ErrorAs(t, err, &exit, "the story fails while the bug is there:\n%s", replayed)
	assert.Contains(t, string(replayed), "violated: per-room-ordering: ")
	assert.Equal(t, lastLineOf(got), lastLineOf(string(replayed)), "the same trace hash")
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
		{"go run ./cmd/relaysim replay -seed 0x2 -mode bulk -users=5 -trace trace.txt", "go run ./cmd/relaysim shrink -seed 0x2 -mode bulk -users=5"},
		{"go run -overlay=/tmp/o.json ./cmd/relaysim replay -seed 0x1 -mode single -trace trace.txt", "go run -overlay=/tmp/o.json ./cmd/relaysim shrink -seed 0x1 -mode single"},
		{"go run ./cmd/relaysim equiv -seed 0x9", "go run ./cmd/relaysim shrink -equiv -seed 0x9"},
	} {
		assert.Equal(t, tc.want, shrinkOf(tc.replay))
	}
}

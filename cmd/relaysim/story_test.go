package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/mutants"
)

// replayStory runs bin replay -story path and returns its output and exit
// code.
func replayStory(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"replay"}, args...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errb.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errb.String(), 0
}

// relaysim replay -story plays a story in the built binary: exit 0 on
// the clean code; exit 2 with one line naming the file's line for a bad
// story.
func TestReplayStory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	story, err := filepath.Abs("../../scenarios/testdata/shrunk/crash-and-restart.txt")
	require.NoError(t, err)
	bin := buildRunner(t)

	out, errOut, code := replayStory(t, bin, "-story", story)
	assert.Equal(t, exitOK, code, "%s%s", out, errOut)
	assert.Contains(t, out, "result:      ok, all properties hold")
	assert.Contains(t, out, "(9 actions, 2 faults)")
	again, _, _ := replayStory(t, bin, "-story", story)
	hash := lastLineOf(out)
	require.True(t, strings.HasPrefix(hash, "trace-hash: "), "%q", hash)
	assert.Equal(t, hash, lastLineOf(again), "the same story, the same run")

	// The same story with no fault: a relay's loss has no excuse then.
	calm, err := filepath.Abs("../../scenarios/testdata/shrunk/bulk-relay-calm.txt")
	require.NoError(t, err)
	out, errOut, code = replayStory(t, bin, "-story", calm)
	assert.Equal(t, exitOK, code, "%s%s", out, errOut)
	assert.Contains(t, out, "(9 actions, 0 faults)")

	bad := filepath.Join(t.TempDir(), "bad.txt")
	text, err := os.ReadFile(story)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(text), "1.1s crash n2 for 1s", "1.1s crash n2 for ever", 1)), 0o644))
	out, errOut, code = replayStory(t, bin, "-story", bad)
	assert.Equal(t, exitUsage, code, "%s%s", out, errOut)
	assert.Empty(t, out)
	assert.Equal(t, "relaysim replay: "+bad+`:28: line 1 of faults (1.1s crash n2 for ever): crash: "ever": want a duration >= 0 such as 1.5s or 250ms`+"\n", errOut)

	_, errOut, code = replayStory(t, bin, "-story", story, "-seed", "7")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no flag -seed")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "%q", errOut)
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Under a catalog mutant the story catches (replay -mutant NAME -story,
// the form the story's header gives), the replay exits 1 with the failure
// banner, whose replay line keeps the overlay.
func TestReplayStoryUnderAMutant(t *testing.T) {
	if !*mutantBuilds {
		t.Skip("builds a catalog mutant: run with -mutant-builds (.ci/run does)")
	}
	t.Setenv("TMPDIR", t.TempDir())
	calm, err := filepath.Abs("../../scenarios/testdata/shrunk/bulk-relay-calm.txt")
	require.NoError(t, err)
	header, err := os.ReadFile(calm)
	require.NoError(t, err)
	require.Contains(t, string(header), "go tool relaysim replay -mutant bulk-receiver-drops-last -story scenarios/testdata/shrunk/bulk-relay-calm.txt")
	bin := buildRunner(t)
	out, errOut, code := replayStory(t, bin, "-mutant", "bulk-receiver-drops-last", "-story", calm)
	assert.Equal(t, exitFail, code, "%s%s", out, errOut)
	assert.Contains(t, out, "relaysim FAILED")
	assert.Contains(t, out, "violated: timely-live-delivery")
	overlay := filepath.Join(mutants.Dir("bulk-receiver-drops-last"), "overlay.json")
	assert.Contains(t, out, "go tool -overlay="+overlay+" relaysim replay -story "+calm)
}

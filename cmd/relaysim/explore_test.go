package main

import (
	"github.com/relaysim/relaysim/sim"

	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var exploreSummary = regexp.MustCompile(`(?m)\Aexplore: \d+ schedules, terminal states (\w+(#\d+)?=\d+ ?)+, exhausted=(yes|no), violations=\d+\n\z`)

func finalLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}

// A built-in story's search, one mode: exhausted, no violation, the
// summary as the last line.
func TestExploreStory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(buildRunner(t), "explore", "-story", "send-races-join", "-mode", "bulk")
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "stderr: %s", errb.String())
	assert.Contains(t, out.String(), "== story:send-races-join mode=bulk")
	assert.Regexp(t, exploreSummary, finalLine(out.String()))
	assert.Contains(t, finalLine(out.String()), "exhausted=yes, violations=0")
}

// Bad input is one line and exit 2.
func TestExploreUsage(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "-bound", "x"},
		{"explore", "-story", "nope"},
		{"explore", "-mode", "fast"},
		{"explore", "-story", "send-races-join", "-scenario", "f.txt"},
		{"explore", "-schedule", "s.txt"},
		{"explore", "-j", "2", "-shard", "1/2"},
		{"explore", "-iterate", "-mode", "bulk", "-schedule", "s.txt"},
		{"explore", "-pct", "-1"},
		{"explore", "-seed", "zz"},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%v: %q", args, errb.String())
	}
}

// A schedule that names an op the run never parks is a divergence: the
// harness error, with the op named. Found on this build (or in an older
// file that names none), it is a determinism bug; found on another build,
// the schedule no longer applies to this one: still exit 3, never called a
// determinism bug.
func TestExploreScheduleDivergence(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildRunner(t)
	header := "# relaysim schedule v1: one choice per line (op key, key!fault, or @tick)\n"
	for _, tc := range []struct{ name, build, says string }{
		{"old file", "", "did not repeat itself (a determinism bug)"},
		{"this build", "# build: " + sim.SourceBuild() + "\n", "did not repeat itself (a determinism bug)"},
		{"another build", "# build: src:000000000000 vcs:abc\n", "this schedule no longer applies to this build (found on src:000000000000 vcs:abc, this is src:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.schedule")
			require.NoError(t, os.WriteFile(path, []byte(header+tc.build+"u9|client|a1 nothing\n"), 0o644))
			var out, errb bytes.Buffer
			cmd := exec.Command(bin, "explore", "-story", "send-races-join", "-mode", "single", "-schedule", path)
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, exitHarness, ee.ExitCode())
			assert.Contains(t, errb.String(), tc.says)
			assert.Contains(t, errb.String(), "u9|client|a1 nothing")
			if tc.name == "another build" {
				assert.NotContains(t, errb.String(), "determinism bug")
			}
		})
	}
}

// A failing schedule's banner is built like a failed run's: headline,
// violated properties, the trace around the evidence, a trace hash, and a
// replay command (the mutant's overlay included) that, pasted as is, runs
// the same schedule to the same hash.
func TestExploreBannerUnderAMutant(t *testing.T) {
	if !*mutantBuilds {
		t.Skip("builds a catalog mutant: run with -mutant-builds (.ci/run does)")
	}
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	bin := buildRunner(t)
	cmd := exec.Command(bin, "explore", "-mutant", "idem-key-written-apart", "-scenario", "../../mutants/stories/send-crash-retry.txt", "-mode", "single", "-first", "-out", dir)
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, out)
	require.Equal(t, exitFail, exit.ExitCode(), "%s", out)
	text := string(out)
	assert.Contains(t, text, "relaysim FAILED  explore ../../mutants/stories/send-crash-retry.txt mode=single: failing schedule 1 of 1")
	assert.Contains(t, text, "violated: no-loss: ")
	assert.Contains(t, text, "trace around the first evidence")
	assert.Contains(t, text, "\n  >> ")
	assert.Equal(t, 1, strings.Count(text, "violations: 1\n"), "one count of failing schedules per search")
	hash := regexp.MustCompile(`(?m)^trace-hash ([0-9a-f]{32})$`).FindStringSubmatch(text)
	require.NotNil(t, hash, text)
	replay := regexp.MustCompile(`(?m)^replay:  (go tool -overlay=\S+ relaysim explore .*)$`).FindStringSubmatch(text)
	require.NotNil(t, replay, text)
	args := strings.Fields(replay[1])
	again, err := exec.Command(args[0], args[1:]...).Output()
	require.True(t, errors.As(err, &exit), "%v\n%s", err, again)
	assert.Equal(t, exitFail, exit.ExitCode())
	assert.Contains(t, string(again), "trace-hash "+hash[1]+"\n", "the pasted replay runs the same schedule")
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var exploreSummary = regexp.MustCompile(`(?m)\Aexplore: \d+ schedules, \d+ terminal states, exhausted=(yes|no), violations=\d+\n\z`)

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
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%v: %q", args, errb.String())
	}
}

// A schedule that names an op the run never parks is a divergence: the
// harness error, with the op named.
func TestExploreScheduleDivergence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.schedule")
	require.NoError(t, os.WriteFile(path, []byte("# relaysim schedule v1: one choice per line (op key, key!fault, or @tick)\nu9|client|a1 nothing\n"), 0o644))
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(buildRunner(t), "explore", "-story", "send-races-join", "-mode", "single", "-schedule", path)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitHarness, ee.ExitCode())
	assert.Contains(t, errb.String(), "did not repeat itself")
	assert.Contains(t, errb.String(), "u9|client|a1 nothing")
}

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitMutant(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string
		rest []string
		ok   bool
		err  string
	}{
		{args: []string{"-seed", "0x1"}, rest: []string{"-seed", "0x1"}},
		{args: []string{"-mutant", "gap-not-filled", "-seed", "0x1"}, name: "gap-not-filled", rest: []string{"-seed", "0x1"}, ok: true},
		{args: []string{"-seed", "0x1", "--mutant=gap-not-filled"}, name: "gap-not-filled", rest: []string{"-seed", "0x1"}, ok: true},
		{args: []string{"-seed", "0x1", "-mutant"}, err: "flag needs an argument: -mutant"},
		{args: []string{"-mutant="}, err: "-mutant needs a mutant's name"},
		{args: []string{"--", "-mutant", "x"}, rest: []string{"--", "-mutant", "x"}},
	} {
		name, rest, ok, err := splitMutant(tc.args)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%q", tc.args)
			continue
		}
		require.NoError(t, err, "%q", tc.args)
		assert.Equal(t, tc.name, name, "%q", tc.args)
		assert.Equal(t, tc.rest, rest, "%q", tc.args)
		assert.Equal(t, tc.ok, ok, "%q", tc.args)
	}
}

// A mutant name that is not in the catalog is bad input: one line, exit
// 2, nothing built.
func TestMutantFlagUnknownName(t *testing.T) {
	for _, cmd := range mutantCommands {
		var out, errb bytes.Buffer
		code := run([]string{cmd, "-mutant", "no-such-bug", "-seed", "0x1"}, &out, &errb)
		assert.Equal(t, exitUsage, code, cmd)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%s: %s", cmd, errb.String())
		assert.Contains(t, errb.String(), `no such mutant`, cmd)
	}
	// -h lists it.
	var out bytes.Buffer
	assert.Equal(t, exitOK, run([]string{"run", "-h"}, &out, &bytes.Buffer{}))
	assert.Contains(t, out.String(), "-mutant")
}

// The documented form, go tool relaysim run -mutant NAME, builds the
// mutant itself (nothing prepared beforehand), catches the bug with exit 1
// and prints a replay line that builds the same mutant again.
func TestMutantFlagRunsTheMutant(t *testing.T) {
	if !*mutantBuilds {
		t.Skip("builds a catalog mutant: run with -mutant-builds (.ci/run does)")
	}
	t.Setenv("TMPDIR", t.TempDir()) // no overlay written beforehand
	cmd := exec.Command("go", "tool", "relaysim", "run", "-mutant", "gap-not-filled", "-seed", "0x1", "-mode", "single")
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "want exit 1, got %v\n%s", err, out)
	assert.Equal(t, exitFail, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "violated: per-room-ordering")
	assert.Contains(t, string(out), "replay:  go tool -overlay=")
	assert.Contains(t, string(out), "/relaysim-mutants/gap-not-filled/overlay.json relaysim replay -seed 0x1 -mode single")
}

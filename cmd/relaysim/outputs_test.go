package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every output path is checked before the work starts: a path that cannot
// be written is one line on stderr and exit 2, with nothing run (stdout
// empty) and nothing lost.
func TestOutputsAreCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "f")
	story := "../../scenarios/testdata/shrunk/crash-and-restart.txt"
	junitIn := filepath.Join(dir, "in.xml")
	require.NoError(t, os.WriteFile(junitIn, []byte(`<testsuites></testsuites>`), 0o644))
	for _, args := range [][]string{
		{"run", "-trace", missing},
		{"run", "-timeline", missing},
		{"run", "-history", missing},
		{"run", "-timeline", dir}, // a directory, not a file
		{"replay", "-cpuprofile", missing},
		{"replay", "-story", story, "-trace", missing},
		{"replay", "-story", story, "-timeline", missing},
		{"shrink", "-o", missing},
		{"shrink", "-trace", missing},
		{"explore", "-story", "send-races-join", "-junit", missing},
		{"explore", "-story", "send-races-join", "-timeline", missing},
		{"explore", "-story", "send-races-join", "-out", filepath.Join(junitIn, "sub")},
		{"sweep", "-seeds", "1-2", "-junit", missing},
		{"report", "axis-a", "-plot", filepath.Join(junitIn, "sub")},
		{"junit-merge", "-o", missing, junitIn},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		assert.Equal(t, exitUsage, code, "%q: %s", args, errb.String())
		assert.Empty(t, out.String(), "%q", args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: %q", args, errb.String())
		assert.Contains(t, errb.String(), "cannot write there", "%q", args)
	}
	_, err := os.Stat(filepath.Join(dir, "no-such-dir"))
	assert.True(t, os.IsNotExist(err), "a check creates no file's directory")
}

// An output that exists is left as it is until the command writes it; one
// that does not exist is not left behind by the check.
func TestCheckOutputsLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.txt")
	require.NoError(t, os.WriteFile(kept, []byte("old"), 0o644))
	fresh := filepath.Join(dir, "fresh.txt")
	require.NoError(t, checkOutputs(output{flag: "trace", path: kept}, output{flag: "o", path: fresh}, output{flag: "o", path: "-"}, output{flag: "o"}))
	b, err := os.ReadFile(kept)
	require.NoError(t, err)
	assert.Equal(t, "old", string(b))
	_, err = os.Stat(fresh)
	assert.True(t, os.IsNotExist(err))
	plots := filepath.Join(dir, "plots")
	require.NoError(t, checkOutputs(output{flag: "plot", path: plots, dir: true}))
	ents, err := os.ReadDir(plots)
	require.NoError(t, err)
	assert.Empty(t, ents)
}

// The bad inputs of the first-hour issue: each one line, exit 2.
func TestBadInputIsOneLineExitTwo(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"junit-merge", "-o", filepath.Join(dir, "all.xml"), filepath.Join(dir, "missing.xml")}, "no such file"},
		{[]string{"report"}, "name the experiment"},
		{[]string{"run", "-seed", "0x10000000000000000"}, "out of range"},
		{[]string{"run", "-seed", "zz"}, "malformed seed"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		assert.Equal(t, exitUsage, code, "%q: %s", tc.args, errb.String())
		assert.Empty(t, out.String(), "%q", tc.args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: %q", tc.args, errb.String())
		assert.Contains(t, errb.String(), tc.want, "%q", tc.args)
	}
}

// A story file explore cannot read is a parse error naming its line, exit
// 2, with no summary line (explore runs in its own process: its bubble is
// a test binary's).
func TestExploreMalformedStory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildRunner(t)
	for text, want := range map[string]string{
		"cluster nodes=2\n----\n\nfrobnicate x=1\n----\n":                                   `:4: unknown command "frobnicate"`,
		"cluster nodes=2\n----\n\nexplore bound=zz\nsend user=u1 room=r1 msg=hi\n----\n":    `:4: explore: bound=zz`,
		"connect user=u1 node=n1\n----\n\nexplore\nsend user=u1 room=r1 msg=hi\n----\n":     `:1: no cluster yet`,
		"cluster nodes=2 colour=blue\n----\n\nexplore\nsend user=u1 room=r1 msg=hi\n----\n": `:1: cluster: unknown argument "colour"`,
	} {
		bad := filepath.Join(dir, "bad.txt")
		require.NoError(t, os.WriteFile(bad, []byte(text), 0o644))
		cmd := exec.Command(bin, "explore", "-scenario", bad, "-mode", "bulk")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%q: %v", text, err)
		assert.Equal(t, exitUsage, exit.ExitCode(), "%q: %s%s", text, out.String(), errb.String())
		assert.Empty(t, out.String(), "%q", text)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: %q", text, errb.String())
		assert.Contains(t, errb.String(), "relaysim explore: "+bad+want, "%q", text)
	}
}

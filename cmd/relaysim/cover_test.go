package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// coverBuilds lets the tests that build the runner with coverage run (a
// cold build takes a minute or two on a 2-core machine). .ci/run and make
// test-cover-builds set it.
var coverBuilds = flag.Bool("cover-builds", false, "also run the tests that build the runner with coverage and run -cover commands (slow: .ci/run sets it)")

func TestCoverLine(t *testing.T) {
	assert.Equal(t, "cover: system 86.2% of statements", coverLine(86.24, ""))
	assert.Equal(t, "cover: system 100.0% of statements, probes 3/30", coverLine(100, "probes 3/30"))
}

// The held writer passes everything but the last whole line until flush,
// however the writes split the lines.
func TestHeldLineKeepsTheLastLine(t *testing.T) {
	for _, chunks := range [][]string{
		{"a\nb\nc\n"},
		{"a\n", "b\n", "c\n"},
		{"a\nb", "\nc", "\n"},
		{"a", "\n", "b\nc\n"},
	} {
		var out bytes.Buffer
		h := &heldLine{w: &out}
		for _, c := range chunks {
			_, err := h.Write([]byte(c))
			require.NoError(t, err)
		}
		assert.Equal(t, "a\nb\n", out.String(), "%q", chunks)
		out.WriteString("cover\n")
		h.flush()
		assert.Equal(t, "a\nb\ncover\nc\n", out.String(), "%q", chunks)
	}
}

// The report keeps system/ less its generated code, merges a block listed
// by several counter files, and lists the blocks never run by function.
func TestCoverProfileAndUncovered(t *testing.T) {
	text := `mode: atomic
github.com/relaysim/relaysim/system/a.go:3.20,5.2 2 1
github.com/relaysim/relaysim/system/a.go:5.2,6.3 1 0
github.com/relaysim/relaysim/system/relaypb/relay.pb.go:10.1,11.2 5 0
github.com/relaysim/relaysim/cmd/relaysim/main.go:10.1,11.2 5 0
github.com/relaysim/relaysim/system/a.go:5.2,6.3 1 0
github.com/relaysim/relaysim/system/a.go:9.30,10.2 1 0
github.com/relaysim/relaysim/system/a.go:9.30,10.2 1 4
`
	mode, blocks, err := parseProfile(text)
	require.NoError(t, err)
	assert.Equal(t, "atomic", mode)
	blocks = systemBlocks(blocks)
	require.Len(t, blocks, 3)
	var st coverStats
	for _, b := range blocks {
		st.stmts += b.stmts
		if b.count > 0 {
			st.covered += b.stmts
		}
	}
	assert.Equal(t, coverStats{stmts: 4, covered: 3}, st)
	assert.Equal(t, "mode: atomic\n"+
		"github.com/relaysim/relaysim/system/a.go:3.20,5.2 2 1\n"+
		"github.com/relaysim/relaysim/system/a.go:5.2,6.3 1 0\n"+
		"github.com/relaysim/relaysim/system/a.go:9.30,10.2 1 4\n", formatProfile(mode, blocks))
	funcs := []coverFunc{
		{file: "github.com/relaysim/relaysim/system/a.go", name: "(*T).f", startL: 3, startC: 1, endL: 7, endC: 2},
		{file: "github.com/relaysim/relaysim/system/a.go", name: "g", startL: 9, startC: 1, endL: 11, endC: 2},
	}
	got := formatUncovered(st, blocks, funcs, nil)
	assert.Contains(t, got, "75.0% of statements run, 3 of 4")
	assert.Contains(t, got, "\nsystem/a.go:3 (*T).f: 66.7% of 3 statements\n  system/a.go:5.2,6.3 (1)\n")
	assert.NotContains(t, got, " g:")
	_, _, err = parseProfile("mode: set\nnot a block\n")
	assert.Error(t, err)
}

// -cover's bad uses are one line and exit 2, before anything is built.
func TestCoverUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, args := range [][]string{
		{"run", "-seed", "0x1", "-cover"},
		{"run", "-cover="},
		{"sweep", "-seeds", "1-2", "-cover", file},
		{"explore", "-cover", filepath.Join(file, "sub")},
		{"cover"},
		{"cover", t.TempDir()},
		{"cover", "-require-probes", "no.such-probe", t.TempDir()},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitUsage, run(args, &out, &errb), "%q", args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: %s", args, errb.String())
	}
	for _, cmd := range []string{"run", "sweep", "explore"} {
		var out bytes.Buffer
		assert.Equal(t, exitOK, run([]string{cmd, "-cover", t.TempDir(), "-h"}, &out, &bytes.Buffer{}))
		assert.Contains(t, out.String(), "-cover", cmd)
	}
}

// coverRunner is the plain runner, built once; -cover builds the runner
// with coverage from it (in $TMPDIR/relaysim-cover, as a user's would).
var coverRunner = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "relaysim-cover-test-*")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "relaysim")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// runCover runs the plain runner from the module root and returns its
// exit code, stdout and stderr.
func runCover(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if !*coverBuilds {
		t.Skip("builds the runner with coverage: run with -cover-builds=true (.ci/run does)")
	}
	bin, err := coverRunner()
	require.NoError(t, err)
	c := exec.Command(bin, args...)
	c.Dir = "../.."
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err = c.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%q: %v", args, err)
	}
	return c.ProcessState.ExitCode(), out.String(), errb.String()
}

var coverLineRe = regexp.MustCompile(`(?m)^cover: system \d+\.\d% of statements(, \d+\.\d% of the \d+ not set aside)?(, probes \d+/\d+)?$`)

// coverOf is the cover: line of a command's output; it must be just
// before the last line.
func coverOf(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 2, out)
	line := lines[len(lines)-2]
	require.Regexp(t, coverLineRe, line, out)
	return line
}

// run -cover writes its counters and report, and changes no trace hash:
// the main job prints the same last line with and without it.
func TestCoverBuildsRunWritesData(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCover(t, "run", "-seed", "0x2a", "-mode", "bulk", "-cover", dir)
	require.Equal(t, exitOK, code, "%s\n%s", out, stderr)
	assert.True(t, strings.HasSuffix(out, "trace-hash: 9b4d7547307b3f0de5cb7f95fcbcda91\n"), out)
	line := coverOf(t, out)
	assert.NotEqual(t, "cover: system 0.0% of statements", line)
	for _, f := range []string{coverOut, uncoveredTxt, coverHTML} {
		st, err := os.Stat(filepath.Join(dir, f))
		if assert.NoError(t, err, f) {
			assert.Positive(t, st.Size(), f)
		}
	}
	metas, _ := filepath.Glob(filepath.Join(dir, "data", "run-*", "covmeta.*"))
	counters, _ := filepath.Glob(filepath.Join(dir, "data", "run-*", "covcounters.*"))
	assert.Len(t, metas, 1)
	assert.NotEmpty(t, counters)
	profile, err := os.ReadFile(filepath.Join(dir, coverOut))
	require.NoError(t, err)
	assert.NotContains(t, string(profile), "relaypb", "generated code is left out")
	assert.NotContains(t, stderr, "GOCOVERDIR not set")
	// relaysim cover DIR reports the same from the counters in DIR.
	code, merged, stderr := runCover(t, "cover", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, line, coverOf(t, merged+"-"))
}

// The done-when of issue 29: a sweep's cover: line is the same at -j 1 and
// -j 2, and two shards merged with relaysim cover report the whole sweep's.
func TestCoverBuildsSweepJobsAndShards(t *testing.T) {
	sweep := []string{"sweep", "-seeds", "1-3", "-mode", "both"}
	lines := map[string]string{}
	for _, j := range []string{"1", "2"} {
		code, out, stderr := runCover(t, append(sweep, "-j", j, "-cover", t.TempDir())...)
		require.Equal(t, exitOK, code, "%s\n%s", out, stderr)
		require.True(t, strings.HasSuffix(out, "runs: 15 failed: 0\n"), out)
		lines[j] = coverOf(t, out)
	}
	assert.Equal(t, lines["1"], lines["2"], "-j 1 and -j 2")
	dir := t.TempDir()
	for _, s := range []string{"1/2", "2/2"} {
		code, out, stderr := runCover(t, append(sweep, "-j", "2", "-shard", s, "-cover", dir)...)
		require.Equal(t, exitOK, code, "%s\n%s", out, stderr)
	}
	code, out, stderr := runCover(t, "cover", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "merged: the counters of 2 commands")
	assert.Equal(t, lines["1"], coverOf(t, out+"-"), "shards merged and the whole sweep")
	// Every entry of docs/cover-aside.txt matches statements of the build.
	unc, err := os.ReadFile(filepath.Join(dir, uncoveredTxt))
	require.NoError(t, err)
	assert.Contains(t, string(unc), "# set aside (docs/cover-aside.txt)")
	assert.NotContains(t, string(unc), "match no statement")

	// The merge names the probes no run hit, and judges -require-cover and
	// -require-probes on the whole.
	assert.Regexp(t, `(?m)^probes never hit in 15 runs: `, out)
	code, out, _ = runCover(t, "cover", "-require-cover", "100", dir)
	assert.Equal(t, exitFail, code, out)
	assert.Regexp(t, `(?m)^FAIL cover: \d+\.\d% of the statements not set aside ran, below the 100\.0% required`, out)
	code, out, _ = runCover(t, "cover", "-require-cover", "1", "-require-probes", "executor.task-panicked", dir)
	assert.Equal(t, exitFail, code, out)
	assert.Contains(t, out, "FAIL probes: required, never hit in 15 runs: executor.task-panicked\n")
	assert.NotContains(t, out, "FAIL cover:")
	code, out, _ = runCover(t, "cover", "-require-cover", "1", "-require-probes", "executor.task-queued", dir)
	assert.Equal(t, exitOK, code, out)
}

// explore -j's workers write their counters into the command's data.
func TestCoverBuildsExplore(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCover(t, "explore", "-story", "send-races-join", "-mode", "bulk", "-j", "2", "-cover", dir)
	require.Equal(t, exitOK, code, "%s\n%s", out, stderr)
	coverOf(t, out)
	counters, _ := filepath.Glob(filepath.Join(dir, "data", "explore-*", "covcounters.*"))
	assert.GreaterOrEqual(t, len(counters), 2, "the workers' counters")
}

// A set-aside entry takes its statements out of the second share, lists
// them with their reason at the end of uncovered.txt, and says so when it
// matches no block of the profile.
func TestCoverAside(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "system"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "system", "a.go"), []byte(`package system

func (t *T) f() {
	x()
}

func g(v bool) {
	if v {
		y()
	}
	z()
}

var table = []func(){func() { w() }}
`), 0o644))
	aside, err := parseCoverAside(strings.NewReader(`# comment
system/a.go (*T).f -- only a real process calls it

system/a.go g: if v -- a corrupt log entry
system/a.go var table -- old builds
`), "aside.txt")
	require.NoError(t, err)
	require.Len(t, aside, 3)
	require.NoError(t, resolveAside(root, aside))
	_, blocks, err := parseProfile(`mode: atomic
github.com/relaysim/relaysim/system/a.go:3.18,5.2 2 1
github.com/relaysim/relaysim/system/a.go:7.16,8.6 1 1
github.com/relaysim/relaysim/system/a.go:8.6,10.3 1 0
github.com/relaysim/relaysim/system/a.go:11.2,11.5 4 1
github.com/relaysim/relaysim/system/a.go:14.30,14.35 1 0
`)
	require.NoError(t, err)
	blocks = systemBlocks(blocks)
	funcs := []coverFunc{
		{file: "github.com/relaysim/relaysim/system/a.go", name: "(*T).f", startL: 3, startC: 1, endL: 5, endC: 2},
		{file: "github.com/relaysim/relaysim/system/a.go", name: "g", startL: 7, startC: 1, endL: 12, endC: 2},
	}
	st := countCover(blocks, aside)
	assert.Equal(t, coverStats{stmts: 9, covered: 7, aside: 4, asideRan: 2}, st)
	assert.Equal(t, "cover: system 77.8% of statements, 100.0% of the 5 not set aside, probes 1/2", st.line("probes 1/2"))
	assert.Equal(t, "cover: system 77.8% of statements, 100.0% of the 5 not set aside", st.line(""))
	assert.Equal(t, "cover: system 50.0% of statements", coverStats{stmts: 2, covered: 1}.line(""))
	got := formatUncovered(st, blocks, funcs, aside)
	assert.Contains(t, got, "# not set aside (docs/cover-aside.txt, listed at the end): 100.0% of the 5 not set aside, 5 of them run\n")
	assert.NotContains(t, got, "system/a.go:8.6,10.3 (1)")
	assert.Contains(t, got, "system/a.go (*T).f: 2 of 2 statements run -- only a real process calls it\n")
	assert.Contains(t, got, "system/a.go g: if v: 0 of 1 statements run -- a corrupt log entry\n")
	assert.Contains(t, got, "system/a.go var table: 0 of 1 statements run -- old builds\n")
	assert.NotContains(t, got, "match no statement")
	aside[0].stmts = 0
	assert.Contains(t, formatUncovered(st, blocks, funcs, aside), "# entries that match no statement (renamed or moved?): docs/cover-aside.txt:2 (system/a.go (*T).f)\n")

	for _, bad := range []string{"system/a.go g: if nothing -- no such statement\n", "system/a.go h -- no such function\n", "system/a.go var nope -- no such var\n"} {
		a, err := parseCoverAside(strings.NewReader(bad), "aside.txt")
		require.NoError(t, err)
		assert.Error(t, resolveAside(root, a), "%q", bad)
	}
	for _, bad := range []string{"system/a.go f\n", "system/a.go -- no function\n", "cmd/x.go f -- not system\n", "system/a.go f -- \n"} {
		_, err := parseCoverAside(strings.NewReader(bad), "aside.txt")
		assert.Error(t, err, "%q", bad)
	}
}

// Every entry of docs/cover-aside.txt names code of system/ (the cover
// builds' test checks that each also matches blocks of a real profile).
func TestCoverAsideNamesRealCode(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	aside, err := readCoverAside(root)
	require.NoError(t, err)
	require.NotEmpty(t, aside)
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
)

// Bad usage is exit 2 with a message saying what is wrong; nothing runs.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage: relaysim"},
		{"unknown command", []string{"fly"}, `unknown command "fly"`},
		{"unknown mode", []string{"run", "-mode", "multi"}, `unknown mode "multi"`},
		{"malformed seed", []string{"run", "-seed", "0xzz"}, `malformed seed "0xzz"`},
		{"negative users", []string{"run", "-users", "-3"}, "users must be 1..100000"},
		{"negative nodes", []string{"replay", "-nodes", "-1"}, "nodes must be 1..64"},
		{"negative duration", []string{"run", "-duration", "-1s"}, "durations must not be negative"},
		{"bad pool", []string{"run", "-core", "9", "-max", "4"}, "bad pool sizes"},
		{"bad channels", []string{"run", "-channels", "-1"}, "channels per peer must be"},
		{"unknown scheduler", []string{"run", "-scheduler", "fifo"}, `unknown scheduler "fifo"`},
		{"unknown flag", []string{"run", "-colour"}, "relaysim run: no flag -colour (relaysim run -h lists the flags)"},
		{"mistyped flag", []string{"run", "-nodse", "3"}, "no flag -nodse (did you mean -nodes?)"},
		{"duration without a unit", []string{"run", "-duration", "5"}, `-duration "5": want a duration such as 5s`},
		{"bad number", []string{"replay", "-users", "many"}, `-users "many": want a whole number`},
		{"bad bool", []string{"equiv", "-faults=maybe"}, `-faults "maybe": want true or false`},
		{"flag without its value", []string{"run", "-seed"}, "-seed needs a value"},
		{"sweep's singular seed", []string{"sweep", "-seed", "0x2a"}, "a sweep takes -seeds A-B (-seeds 0x2a for that one seed)"},
		{"sweep unknown flag", []string{"sweep", "-sedes", "1-3"}, "no flag -sedes (did you mean -seeds?)"},
		{"report unknown flag", []string{"report", "axis-a", "-plt", "x"}, "no flag -plt (did you mean -plot?)"},
		{"mutants bad budget", []string{"mutants", "-budget", "3"}, `-budget "3": want a duration`},
		{"junit-merge unknown flag", []string{"junit-merge", "-out", "x"}, "no flag -out"},
		{"stray argument", []string{"run", "extra"}, `unexpected argument "extra"`},
		{"sweep bad range", []string{"sweep", "-seeds", "9-3"}, "A <= B"},
		{"sweep bad shard", []string{"sweep", "-shard", "3/2"}, "want i/n"},
		{"sweep bad jobs", []string{"sweep", "-j", "0"}, "-j must be at least 1"},
		{"sweep bad mode", []string{"sweep", "-mode", "fast"}, `unknown mode "fast": want single, bulk, stream, both (single and bulk) or all`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errb.String(), tc.want)
			assert.Empty(t, out.String(), "bad usage must not start a run")
			if len(tc.args) > 1 {
				assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "one line, not the flag list:\n%s", errb.String())
			}
		})
	}
}

// -h is not an error: the command's every flag, on stdout, exit 0.
func TestHelpFlagPrintsTheFlags(t *testing.T) {
	for _, cmd := range []string{"run", "replay", "equiv", "sweep", "report", "mutants", "junit-merge"} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitOK, run([]string{cmd, "-h"}, &out, &errb), cmd)
		assert.Contains(t, out.String(), "usage: relaysim "+cmd, cmd)
		assert.Empty(t, errb.String(), cmd)
	}
	var out bytes.Buffer
	run([]string{"sweep", "-h"}, &out, &bytes.Buffer{})
	for _, flag := range []string{"-seeds", "-shard", "-duration", "-max-crashes"} {
		assert.Contains(t, out.String(), flag)
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, exitOK, run([]string{"help"}, &out, &errb))
	assert.Contains(t, out.String(), "sweep")
}

// buildRunner builds the relaysim binary once per test.
func buildRunner(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "relaysim")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

func lastLine(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	require.NoError(t, err, "relaysim %v: %s", args, out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// The acceptance check: the same seed prints the same trace hash on
// every invocation, in both modes; another seed prints another.
func TestRunPrintsStableTraceHash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildRunner(t)
	for _, mode := range []string{"single", "bulk"} {
		a := lastLine(t, bin, "run", "-seed", "0x2a", "-mode", mode)
		b := lastLine(t, bin, "run", "-seed", "0x2a", "-mode", mode)
		c := lastLine(t, bin, "run", "-seed", "0x2b", "-mode", mode)
		require.True(t, strings.HasPrefix(a, "trace-hash: "), "last line %q", a)
		assert.Equal(t, a, b, "mode %s", mode)
		assert.NotEqual(t, a, c, "mode %s: seeds 0x2a and 0x2b", mode)
	}
	// Two seeds: a run in each mode, the mode-equivalence pair and the
	// churn-only variant in each mode.
	dir := t.TempDir()
	last := lastLine(t, bin, "sweep", "-seeds", "1-2", "-mode", "both", "-j", "2", "-junit", filepath.Join(dir, "w.xml"))
	assert.Equal(t, "runs: 10 failed: 0", last)
	out, err := exec.Command(bin, "sweep", "-seeds", "1-2", "-mode", "bulk", "-equiv=false", "-j", "2", "-isolate", "-junit", filepath.Join(dir, "p.xml")).Output()
	require.NoError(t, err)
	// The coverage line, the probe block (docs/probes.md), the counts,
	// the last line.
	lines := strings.SplitAfter(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Greater(t, len(lines), 5, "%q", out)
	assert.True(t, strings.HasPrefix(lines[0], "coverage: of 4 runs, met: "), "%q", lines[0])
	assert.Equal(t, "probes hit, of 4 runs:\n", lines[1])
	n := len(lines)
	assert.Regexp(t, `^probes: \d+/\d+ hit\n$`, lines[n-4])
	assert.True(t, strings.HasPrefix(lines[n-3], "never hit: "), "%q", lines[n-3])
	assert.Equal(t, "sweep: 2 seeds x 2 runs (bulk, churn-only bulk) = 4 runs; failed: 0 seeds, 0 runs\nruns: 4 failed: 0", strings.Join(lines[n-2:], ""))

	// A job run by a worker process, after other jobs in that process,
	// prints what the command run alone prints: the same trace hashes.
	worker, alone := junitHashes(t, filepath.Join(dir, "w.xml")), junitHashes(t, filepath.Join(dir, "p.xml"))
	assert.Equal(t, worker["seed=0x2 mode=bulk"], alone["seed=0x2 mode=bulk"])
	// The sweep draws a Redis rewind for seed 0x2 (sim.SweepRewinds):
	// its replay command names the flag, and so does the run alone.
	w, err := os.ReadFile(filepath.Join(dir, "w.xml"))
	require.NoError(t, err)
	require.Contains(t, string(w), "replay -seed 0x2 -mode single -max-redis-rewinds=1 ")
	for name, args := range map[string][]string{
		"seed=0x2 mode=single": {"run", "-seed", "0x2", "-mode", "single", "-max-redis-rewinds=1"},
		"seed=0x2 mode=equiv":  {"equiv", "-seed", "0x2", "-max-redis-rewinds=1"},
	} {
		want := lastLine(t, bin, args...)
		_, want, _ = strings.Cut(want, ": ")
		assert.Equal(t, want, worker[name], name)
	}
}

// junitHashes reads the trace hash of every case of a sweep's JUnit file.
func junitHashes(t *testing.T, path string) map[string]string {
	t.Helper()
	suites, err := readJUnit(path)
	require.NoError(t, err)
	out := map[string]string{}
	for _, s := range suites {
		for _, c := range s.Cases {
			require.NotNil(t, c.SystemOut, c.Name)
			h, _, _ := strings.Cut(strings.TrimPrefix(c.SystemOut.Text, "trace-hash: "), "\n")
			out[c.Name] = h
		}
	}
	return out
}

// The banner's replay command is one pasteable line: the flags that were
// set, and the overlay a mutant build needs.
func TestReplayCommand(t *testing.T) {
	f := newRunFlags("run", &bytes.Buffer{})
	require.NoError(t, f.parse([]string{"-seed", "0x2a", "-mode", "single", "-users", "5", "-trace", "x.txt"}))
	assert.Equal(t, "go tool relaysim replay -seed 0x2a -mode single -users=5 -trace trace.txt", replayCommand(f))
	t.Setenv("RELAYSIM_OVERLAY", "/tmp/m.json")
	assert.Equal(t, "go tool -overlay=/tmp/m.json relaysim replay -seed 0x2a -mode single -users=5 -trace trace.txt", replayCommand(f))
}

// A test binary carries no VCS stamp: the banner says the commit is
// unknown, and why.
func TestCommitFromBuildInfo(t *testing.T) {
	assert.Equal(t, "unknown", sim.BuildCommit())
	assert.Contains(t, commitNote("unknown"), "go run")
	assert.Equal(t, "0123456789ab+dirty", commitNote("0123456789ab+dirty"))
}

func TestRatio(t *testing.T) {
	for x, want := range map[float64]string{0.49: "0.49x", 0.004: "0.00x", 1.25: "1.2x", 9.96: "10.0x", 10: "10x", 132.4: "132x"} {
		assert.Equal(t, want, ratio(x), "%v", x)
	}
}

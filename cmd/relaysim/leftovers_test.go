package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/mutants"
)

// mutantBuilds lets the tests that build a catalog mutant run: each build
// takes 20-90 s on a 2-core machine, which would push the package towards
// go test's 10-minute timeout under load. .ci/run and make test-mutant-builds
// set it.
var mutantBuilds = flag.Bool("mutant-builds", false, "also run the tests that build the runner with a catalog mutant (slow: .ci/run sets it)")

// buildMutant builds the runner with a catalog mutant's overlay, as the
// catalog does, and returns the binary and the overlay. Without
// -mutant-builds it skips the test.
func buildMutant(t *testing.T, name string) (bin, overlay string) {
	t.Helper()
	if !*mutantBuilds {
		t.Skip("builds a catalog mutant: run with -mutant-builds (.ci/run does)")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	all, err := mutants.Catalog()
	require.NoError(t, err)
	ms, err := mutants.Select(all, []string{name}, "")
	require.NoError(t, err)
	overlay, err = mutants.Apply(root, ms[0])
	require.NoError(t, err)
	bin = filepath.Join(t.TempDir(), "relaysim")
	out, err := exec.Command("go", "build", "-overlay="+overlay, "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin, overlay
}

// Goroutines left after teardown end the process from inside the bubble
// (synctest would abort it with a dump): that is exactly the run a user
// wants to inspect, so its CPU profile, trace and history are written
// whole first. The verdict is the goroutine-leak property (exit 1), and the
// replay command names the overlay the binary was built with even with
// RELAYSIM_OVERLAY unset.
func TestLeftoverGoroutinesKeepTheRunsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a mutant and runs it")
	}
	bin, overlay := buildMutant(t, "goroutine-leak-on-start")
	dir := t.TempDir()
	hist, prof, trace := filepath.Join(dir, "h.jsonl"), filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "t.txt")
	cmd := exec.Command(bin, "run", "-seed", "1", "-mode", "bulk", "-history", hist, "-cpuprofile", prof, "-trace", trace)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, mutants.OverlayEnv+"=") })
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, out)
	assert.Equal(t, exitFail, exit.ExitCode())

	s, ok := mutants.ParseSummary(string(out))
	require.True(t, ok, "%s", out)
	assert.Equal(t, []string{model.PropGoroutineLeak}, s.Violations)
	assert.Equal(t, "go tool -overlay="+overlay+" relaysim replay -seed 0x1 -mode bulk -trace trace.txt", s.Replay)
	assert.Contains(t, string(out), "replay:  "+s.Replay+"\n", "the banner's replay line")

	for _, f := range []string{prof, trace} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.NotZero(t, st.Size(), f)
	}
	// The history is whole: every line JSON, the last the final record
	// naming the leftover goroutines.
	hf, err := os.Open(hist)
	require.NoError(t, err)
	defer hf.Close()
	sc := bufio.NewScanner(hf)
	sc.Buffer(nil, 64<<20)
	var last string
	for sc.Scan() {
		require.True(t, json.Valid(sc.Bytes()), "history line %.200s", sc.Text())
		last = sc.Text()
	}
	require.NoError(t, sc.Err())
	assert.Contains(t, last, "LeftoverGoroutines")
}

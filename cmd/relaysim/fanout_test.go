package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
)

// fakeSelf points selfPath at a shell script standing in for this binary.
func fakeSelf(t *testing.T, script string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "relaysim")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	old := selfPath
	selfPath = func() (string, error) { return path, nil }
	t.Cleanup(func() { selfPath = old })
}

// shardScript is a fake `explore -shard k/n` child: shard 1/2 does what
// first says, shard 2/2 what second says.
func shardScript(first, second string) string {
	return "if [ \"$3\" = 1/2 ]; then\n" + first + "\nelse\n" + second + "\nfi"
}

// shardOK prints a search's report and its summary line, and writes the
// same summary as its result.
func shardOK(js, last string, exit int) string {
	return "J='" + js + "'\necho '== story:x mode=bulk'\necho \"$J\"\necho \"$J\" > \"$RELAYSIM_RESULT\"\necho '" + last + "'\nexit " + string(rune('0'+exit))
}

// explore -j sums its shards' typed results; it prints their text
// without their summary lines, each shard's last line rebuilt from its
// result.
func TestExploreParallelSumsTypedResults(t *testing.T) {
	ok := shardOK(`{"summary":"ok","exit":0,"command":"explore","seed":"","mode":"bulk","violations":[],"trace_hash":"","schedules":3,"terminal":{"bulk":1},"searches":[{"search":"bulk","schedules":3,"terminal":1,"probes":{"a":2}}],"probes":{"a":2},"exhausted":true,"first_violation":0}`,
		"explore: 3 schedules, terminal states bulk=1, exhausted=yes, violations=0", 0)
	bad := shardOK(`{"summary":"violation","exit":1,"command":"explore","seed":"","mode":"stream","violations":["no-loss"],"trace_hash":"","replay":"relaysim explore -x","evidence":["violated: no-loss: lost"],"schedules":5,"terminal":{"stream":2},"searches":[{"search":"stream","schedules":5,"terminal":2,"probes":{"a":1,"b":5}}],"probes":{"a":1,"b":5},"exhausted":false,"first_violation":4,"failing":1}`,
		"this last line is not read", 1)
	fakeSelf(t, shardScript(ok, bad))
	var out, errb bytes.Buffer
	code := exploreParallel([]string{"-mode", "all", "-j", "2"}, 2, &out, &errb)
	assert.Equal(t, exitFail, code, errb.String())
	want := "== story:x mode=bulk\n(worker 1/2: explore: 3 schedules, terminal states bulk=1, exhausted=yes, violations=0)\n" +
		"== story:x mode=bulk\n(worker 2/2: explore: 5 schedules, terminal states stream=2, exhausted=no, violations=1)\n" +
		`{"summary":"violation","exit":1,"command":"explore","seed":"","mode":"stream","violations":["no-loss"],"trace_hash":"","replay":"relaysim explore -x","evidence":["violated: no-loss: lost"],"schedules":8,"terminal":{"bulk":1,"stream":2},"searches":[{"search":"bulk","bound":"","budgets":null,"horizon":"","schedules":3,"terminal":1,"max_depth":0,"exhausted":false,"cut":{"bound":0,"budgets":null,"depth":0,"horizon":0},"probes":{"a":2}},{"search":"stream","bound":"","budgets":null,"horizon":"","schedules":5,"terminal":2,"max_depth":0,"exhausted":false,"cut":{"bound":0,"budgets":null,"depth":0,"horizon":0},"probes":{"a":1,"b":5}}],"probes":{"a":3,"b":5},"exhausted":false,"first_violation":4,"failing":1}` + "\n" +
		"explore: 8 schedules, terminal states bulk=1 stream=2, exhausted=no, violations=1\n"
	assert.Equal(t, want, out.String())
}

// A shard that ends without a typed result (it crashed, or printed a
// perfect last line but wrote nothing), wrote garbage, or whose result
// disagrees with its exit code is a harness error, never a verdict.
func TestExploreParallelShardWithoutResult(t *testing.T) {
	ok := shardOK(`{"summary":"ok","exit":0,"command":"explore","violations":[],"schedules":3,"terminal":{"bulk":1},"searches":[{"search":"bulk","schedules":3,"terminal":1}],"exhausted":true}`,
		"explore: 3 schedules, terminal states bulk=1, exhausted=yes, violations=0", 0)
	for _, tc := range []struct{ name, second, says string }{
		{"crash", "echo 'panic: boom'; exit 2", "without a result"},
		{"text only", "echo '{\"summary\":\"ok\",\"exit\":0}'; echo 'explore: 3 schedules, terminal states bulk=1, exhausted=yes, violations=0'", "without a result"},
		{"garbage", "echo 'violations=0' > \"$RELAYSIM_RESULT\"; echo 'explore: 3 schedules, terminal states bulk=1, exhausted=yes, violations=0'", "does not parse"},
		{"disagrees", "echo '{\"summary\":\"ok\",\"exit\":0,\"command\":\"explore\"}' > \"$RELAYSIM_RESULT\"; exit 1", "the process exited 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeSelf(t, shardScript(ok, tc.second))
			var out, errb bytes.Buffer
			code := exploreParallel([]string{"-j", "2"}, 2, &out, &errb)
			assert.Equal(t, exitHarness, code)
			assert.Contains(t, errb.String(), "worker 2/2: ")
			assert.Contains(t, errb.String(), tc.says)
			assert.NotContains(t, out.String(), `"summary":"ok","exit":0,"command":"explore","seed"`, "no verdict line of the parent's")
		})
	}
}

// shrink -isolate reads a candidate's run from the child's result file:
// a child that crashed or wrote garbage is a run that could not finish
// (its Err), whatever it printed.
func TestIsolatorReadsTheResultFile(t *testing.T) {
	for _, tc := range []struct{ name, script, says string }{
		{"crash", `echo '{"violations":[],"steps":3,"trace_hash":"x","ran":""}'; echo 'panic: boom' >&2; exit 2`, "without a result"},
		{"garbage", `echo 'violated: no-loss' > "$RELAYSIM_RESULT"; exit 1`, "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeSelf(t, tc.script)
			iso, err := newIsolator()
			require.NoError(t, err)
			defer iso.close()
			res, _ := iso.run(sim.DefaultConfig())
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), tc.says)
			assert.True(t, strings.HasPrefix(res.Err.Error(), "child process (run 1)"), res.Err.Error())
			assert.Empty(t, res.Violations)
		})
	}
}

package scenarios

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

// scenarioModes are the modes every scenario file is played in.
var scenarioModes = system.Modes

// TestScenarios plays every scenario file of testdata/ in every relay
// mode, each in a bubble of its own, merges the outputs (lines only some
// modes printed are led by their names) and compares them with the
// expected output under each command's "----". If this fails, run with
// -rewrite and inspect the diff:
//
//	go test ./scenarios -run TestScenarios -rewrite && git diff scenarios/testdata
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scenario files in testdata/")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("if this fails, run with -rewrite and inspect the diff: go test ./scenarios -run TestScenarios -rewrite && git diff scenarios/testdata")
		}
	})
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			if slowStories[name] && !*exploreSlow {
				t.Skip("a pinned search of over 10 s of CPU over its modes: .ci/run and make explore run it (-explore.slow)")
			}
			outs := playModes(t, path)
			i := 0
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				require.Less(t, i, len(outs), "%s: more commands than outputs", d.Pos)
				i++
				return outs[i-1]
			})
		})
	}
}

// slowStories are the explore stories whose pinned searches take over 10 s
// of CPU over the three modes (BENCHMARKS.md, "Reach at bound 2"):
// go test ./scenarios skips them, to stay within its budget, unless
// -explore.slow is given; .ci/run and make explore give it.
var slowStories = map[string]bool{
	"explore-two-senders":         true,
	"explore-crash-during-fanout": true,
	"explore-user-moves":          true,
}

var exploreSlow = flag.Bool("explore.slow", false, "also run the explore stories whose pinned searches are slow (slowStories; .ci/run and make explore)")

// playModes plays path in every mode and returns the merged outputs.
func playModes(t *testing.T, path string) []string {
	per := make([][]string, len(scenarioModes))
	for m, mode := range scenarioModes {
		var err error
		synctest.Test(t, func(t *testing.T) { per[m], err = RunFile(t, path, mode) })
		require.NoError(t, err, "mode %s", mode)
	}
	return MergeModes(scenarioModes, per)
}

// TestScenarioRewrite: -rewrite fills a story whose expected outputs were
// removed back to the committed file (before and after files, as
// datadriven's own rewrite tests).
func TestScenarioRewrite(t *testing.T) {
	const story = "testdata/duplicate-relays.txt"
	want, err := os.ReadFile(story)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "story.txt")
	require.NoError(t, os.WriteFile(path, []byte(withoutOutputs(string(want))), 0o644))
	rewrite := flag.Lookup("rewrite")
	require.NotNil(t, rewrite, "datadriven's -rewrite flag")
	old := rewrite.Value.String()
	require.NoError(t, rewrite.Value.Set("true"))
	t.Cleanup(func() { _ = rewrite.Value.Set(old) })
	outs := playModes(t, path)
	i := 0
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { i++; return outs[i-1] })
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// withoutOutputs removes every expected output of a scenario file.
func withoutOutputs(file string) string {
	var b strings.Builder
	skipping := false
	for _, line := range strings.SplitAfter(file, "\n") {
		switch {
		case skipping && strings.TrimSpace(line) == "":
			skipping = false
		case skipping:
			continue
		case strings.TrimSpace(line) == "----":
			skipping = true
		}
		b.WriteString(line)
	}
	return b.String()
}

// TestScenarioErrors: a typo in a command or an argument, a value of the
// wrong type or a node that does not exist stops the file with an error
// that names the file and the line.
func TestScenarioErrors(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"unknown command", "cluster nodes=2\n----\n\nsned user=u1 room=r1 msg=hi\n----\n", `bad.txt:4: unknown command "sned"`},
		{"unknown argument", "cluster nodes=2\n----\n\nconnect usr=u1 node=n1\n----\n", `bad.txt:4: connect: unknown argument "usr" (it takes user, node)`},
		{"ill-typed value", "cluster nodes=2\n----\n\nrun for=5x\n----\n", `bad.txt:4: run: for=5x is not a positive duration`},
		{"no such node", "cluster nodes=2\n----\n\ncrash node=n3\n----\n", `bad.txt:4: crash: node=n3: no such node (the cluster has n1 n2)`},
		{"missing argument", "cluster nodes=2\n----\n\nsend user=u1 room=r1\n----\n", `bad.txt:4: send: missing argument msg=`},
		{"ill-quoted name", "cluster nodes=2\n----\n\njoin user=ålice room=\"caf\\q\"\n----\n", `bad.txt:4: join: room="caf\q" is not a Go-quoted string`},
		{"command before cluster", "run for=1s\n----\n", `bad.txt:1: no cluster yet`},
		{"unknown protocol", "cluster nodes=2 versions=v1,v9\n----\n", `bad.txt:1: cluster: versions=: unknown relay protocol "v9"`},
		{"unknown legacy behaviour", "cluster nodes=2 legacy=all,names+oldbugs\n----\n", `bad.txt:1: cluster: legacy=: unknown legacy behaviour "oldbugs"`},
		{"legacy for too many nodes", "cluster nodes=2 legacy=all,none,all\n----\n", `bad.txt:1: cluster: legacy= names 3 nodes, the cluster has 2`},
		{"unknown legacy at restart", "cluster nodes=2 legacy=all\n----\n\nrestart node=n1 legacy=sometimes\n----\n", `bad.txt:4: restart: legacy=sometimes: unknown legacy behaviour "sometimes"`},
		{"restart of a running node", "cluster nodes=2\n----\n\nrestart node=n1\n----\n", `bad.txt:4: restart: n1 is up (restart protocol=vN or legacy=... restarts a running node gracefully)`},
		{"steal without an id", "cluster nodes=2\n----\n\nsteal user=u1 room=r1\n----\n", `bad.txt:4: steal: missing argument msg=`},
		{"unknown forged call", "cluster nodes=2\n----\n\nforge user=u1 call=teleport as=u2 room=r1 cred=garbage\n----\n", `bad.txt:4: forge: unknown forged call "teleport" (calls: send, join, leave, create-room, connect, relay, relay-bulk, relay-stream)`},
		{"unknown credential shape", "cluster nodes=2\n----\n\nforge user=u1 call=send as=u2 room=r1 cred=lucky\n----\n", `bad.txt:4: forge: unknown credential shape "lucky" (shapes: missing, empty, truncated, wrong-case, other-user, wrong-secret, garbage, wrong-cluster)`},
		{"forge without a room", "cluster nodes=2\n----\n\nforge user=u1 call=relay as=u2 cred=empty\n----\n", `bad.txt:4: forge: call=relay needs room=`},
		{"forge without a shape", "cluster nodes=2\n----\n\nforge user=u1 call=join as=u2 room=r1\n----\n", `bad.txt:4: forge: missing argument cred=`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.txt")
			require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o644))
			var err error
			synctest.Test(t, func(t *testing.T) { _, err = RunFile(t, path, system.ModeBulk) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestMergeModes: lines every mode printed stay bare and in place; the
// others are led by the modes that printed them.
func TestMergeModes(t *testing.T) {
	modes := []system.Mode{"a", "b", "c"}
	got := MergeModes(modes, [][]string{
		{"x\ny\nz\n", "same\n", ""},
		{"x\nY\nz\n", "same\n", ""},
		{"x\ny\nz\nw\n", "same\n", ""},
	})
	assert.Equal(t, []string{"x\n[a,c] y\n[b] Y\nz\n[c] w\n", "same\n", ""}, got)
}

package main

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.xml from the code")

// A failing run's output as `relaysim run` prints it: summary, banner,
// trace hash.
const failedRunOutput = `relaysim run seed=0x2b mode=bulk scheduler=random nodes=3 users=12 rooms=3 channels=2
result:      FAIL 1 violations
==============================================================================
relaysim FAILED  seed=0x2b mode=bulk scheduler=random channels=2
violated: no-loss: room r1 seq 7: acked but not in the room log (trace line 120)
trace-hash 0badc0de
replay:  go tool relaysim replay -seed 0x2b -mode bulk -users=5 -trace trace.txt
==============================================================================
trace-hash: 0badc0de
`

func sampleJobs() []*sweepJob {
	ok := &sweepJob{seed: 0x2a, mode: "bulk", wall: 250 * time.Millisecond}
	ok.record(exitOK, &runSummary{Summary: classOK, TraceHash: "36f2829e"}, "result:      ok, all properties hold\ntrace-hash: 36f2829e\n")
	bad := &sweepJob{seed: 0x2b, mode: "bulk", wall: 1500 * time.Millisecond}
	bad.record(exitFail, &runSummary{Summary: classViolation, Exit: exitFail, TraceHash: "0badc0de", Violations: []string{"no-loss"},
		Evidence: []string{"violated: no-loss: room r1 seq 7: acked but not in the room log (trace line 120)"}}, failedRunOutput)
	crashed := &sweepJob{seed: 0x2b, mode: equivMode, wall: time.Second}
	crashed.record(2, nil, "goroutine 1 [running]:\npanic: runtime error: index out of range [3] with length 3\n")
	hung := &sweepJob{seed: 0x2c, mode: "bulk", wall: 10 * time.Minute}
	hung.fail("hung: no result within 10m0s (-job-timeout); the worker was killed\n", "none (timed out after 10m0s)")
	return []*sweepJob{ok, bad, crashed, hung}
}

// The JUnit report of a sweep: a case per job named by seed and mode, the
// banner (with the replay command) as a failure's text, the first violated
// property as its message. If this fails, run with -update and read the
// diff of testdata/sweep-junit.xml.
func TestJUnitReport(t *testing.T) {
	o := sweepOpts{shard: shard{2, 4}, from: envShard}
	suite := junitSuiteOf(sampleJobs(), []string{"-users=5"}, "1-100", o)
	var b bytes.Buffer
	require.NoError(t, encodeJUnit(&b, junitReport([]junitSuite{suite})))
	golden := filepath.Join("testdata", "sweep-junit.xml")
	if *update {
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String())

	// It is JUnit as CI tools read it.
	var r junitReportXML
	require.NoError(t, xml.Unmarshal(b.Bytes(), &r))
	require.Len(t, r.Suites, 1)
	assert.Equal(t, 4, r.Tests)
	assert.Equal(t, 3, r.Failures)
	cases := r.Suites[0].Cases
	assert.Equal(t, "seed=0x2a mode=bulk", cases[0].Name)
	assert.Equal(t, "relaysim.sweep", cases[0].Classname)
	assert.Nil(t, cases[0].Failure)
	f := cases[1].Failure
	require.NotNil(t, f)
	assert.Equal(t, "no-loss: room r1 seq 7: acked but not in the room log (trace line 120)", f.Message)
	assert.Equal(t, "violation", f.Type)
	assert.Contains(t, f.Text, "replay: go tool relaysim replay -seed 0x2b -mode bulk -users=5 -trace trace.txt")
	assert.Contains(t, f.Text, "relaysim FAILED  seed=0x2b")
	assert.NotContains(t, f.Text, "result:", "the summary is not the banner")
	assert.Equal(t, "crash", cases[2].Failure.Type)
	assert.Contains(t, cases[2].Failure.Message, "index out of range")
	assert.Equal(t, "timeout", cases[3].Failure.Type)
}

func TestFailureOf(t *testing.T) {
	for _, tc := range []struct{ out, kind, msg string }{
		// Without a typed result, printed verdicts name nothing.
		{failedRunOutput, "crash", "the run ended without a result"},
		{"error:  start cluster: boom\n", "crash", "the run ended without a result"},
		{"mode equivalence FAILED for seed 0x2 (calm variant): 1 violations\n", "crash", "the run ended without a result"},
		{"fatal error: all goroutines are asleep\n", "crash", "all goroutines are asleep"},
		{"", "crash", "the run ended without a result"},
	} {
		kind, msg := failureOf(tc.out)
		assert.Equal(t, tc.kind, kind, "%q", tc.out)
		assert.Equal(t, tc.msg, msg, "%q", tc.out)
	}
}

// junit-merge gathers the shards' files: every suite and case kept, totals
// recounted, a lone <testsuite> accepted, globs expanded without a shell.
func TestJUnitMerge(t *testing.T) {
	dir := t.TempDir()
	jobs := sampleJobs()
	for i, part := range [][]*sweepJob{jobs[:2], jobs[2:]} {
		o := sweepOpts{shard: shard{i + 1, 2}}
		r := junitReport([]junitSuite{junitSuiteOf(part, nil, "1-100", o)})
		require.NoError(t, writeJUnit(filepath.Join(dir, "junit-"+string(rune('1'+i))+".xml"), r))
	}
	lone := `<testsuite name="other" tests="9" failures="9"><testcase name="a" classname="x"></testcase></testsuite>`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lone.xml"), []byte(lone), 0o644))

	all := filepath.Join(dir, "all.xml")
	var out, errb bytes.Buffer
	code := run([]string{"junit-merge", "-o", all, filepath.Join(dir, "junit-*.xml"), filepath.Join(dir, "lone.xml")}, &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	assert.Equal(t, "junit-merge: 3 files, 3 suites, 5 cases, 3 failed -> "+all+"\n", out.String())
	suites, err := readJUnit(all)
	require.NoError(t, err)
	require.Len(t, suites, 3)
	assert.Equal(t, "relaysim sweep -seeds 1-100 -shard 1/2", suites[0].Name)
	assert.Equal(t, "relaysim sweep -seeds 1-100 -shard 2/2", suites[1].Name)
	assert.Equal(t, []int{2, 1}, []int{suites[0].Tests, suites[0].Failures})
	assert.Equal(t, []int{1, 0}, []int{suites[2].Tests, suites[2].Failures}, "totals are recounted from the cases")
	assert.Equal(t, "seed=0x2b mode=equiv", suites[1].Cases[0].Name)

	// To stdout: the XML and nothing else.
	out.Reset()
	require.Equal(t, exitOK, run([]string{"junit-merge", "-o", "-", filepath.Join(dir, "junit-*.xml")}, &out, &errb))
	assert.True(t, strings.HasPrefix(out.String(), xml.Header), out.String())
	var r junitReportXML
	require.NoError(t, xml.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, 4, r.Tests)
}

func TestJUnitMergeErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.xml")
	require.NoError(t, os.WriteFile(bad, []byte("<html></html>"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no output", []string{filepath.Join(dir, "x.xml")}, exitUsage, "usage: relaysim junit-merge"},
		{"no inputs", []string{"-o", filepath.Join(dir, "all.xml")}, exitUsage, "usage: relaysim junit-merge"},
		{"glob matches nothing", []string{"-o", filepath.Join(dir, "all.xml"), filepath.Join(dir, "junit-*.xml")}, exitUsage, "matches no file"},
		{"missing file", []string{"-o", filepath.Join(dir, "all.xml"), filepath.Join(dir, "nope.xml")}, exitUsage, "no such file"},
		{"not JUnit", []string{"-o", filepath.Join(dir, "all.xml"), bad}, exitUsage, "not JUnit XML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tc.code, run(append([]string{"junit-merge"}, tc.args...), &out, &errb))
			assert.Contains(t, errb.String(), tc.want)
		})
	}
}

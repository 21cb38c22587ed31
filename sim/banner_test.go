package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

func testTrace(keep bool, n int) *Trace {
	t := NewTrace(keep, 60)
	t.Header("header")
	for i := 2; i <= n; i++ {
		t.Event(time.Duration(i)*time.Millisecond, "n1", "event %d", i)
	}
	return t
}

// The banner shows the lines around the first evidence line of the first
// violation that has one, its evidence marked, and falls back to the last
// lines without evidence or a whole trace.
func TestTraceExcerpt(t *testing.T) {
	vs := []model.Violation{{Property: "no-loss"}, {Property: "exactly-once", TraceLines: []int{50, 52, 90}}}
	title, lines := TraceExcerpt(testTrace(true, 200), vs)
	assert.Contains(t, title, "line 50 of 200")
	assert.Contains(t, title, `"exactly-once"`)
	require.Len(t, lines, 21+2) // 40..60, a gap, 90
	assert.Equal(t, "       40 t=00:00.040 n1 event 40", lines[0])
	assert.Equal(t, ">>     50 t=00:00.050 n1 event 50", lines[10])
	assert.Equal(t, ">>     52 t=00:00.052 n1 event 52", lines[12])
	assert.Equal(t, "       60 t=00:00.060 n1 event 60", lines[20])
	assert.Equal(t, "   ...", lines[21])
	assert.Equal(t, ">>     90 t=00:00.090 n1 event 90", lines[22])

	_, lines = TraceExcerpt(testTrace(true, 200), []model.Violation{{TraceLines: []int{3}}})
	assert.Equal(t, "        1 # header", lines[0], "the window starts at line 1")
	assert.Len(t, lines, 13)

	for name, tc := range map[string]struct {
		tr *Trace
		vs []model.Violation
	}{"no evidence": {testTrace(true, 200), vs[:1]}, "tail only": {testTrace(false, 200), vs}} {
		title, lines := TraceExcerpt(tc.tr, tc.vs)
		assert.Equal(t, "last trace lines:", title, name)
		require.Len(t, lines, 30, name)
		assert.Equal(t, "t=00:00.200 n1 event 200", lines[29], name)
	}
}

// A failed run that kept only the trace's tail runs again keeping all of
// it: the same run (same hash), so the banner shows the evidence.
func TestWholeTraceRunsAgain(t *testing.T) {
	cfg := denseConfig(0x77, system.ModeBulk)
	cfg.Bounds = NoFaults()
	res := runOK(t, cfg)
	require.Empty(t, res.Trace.Text(), "the tail only")
	res.Violations = []model.Violation{{Property: "planted", Detail: "for the banner", TraceLines: []int{40}}}

	again := WholeTrace(t, res)
	require.NotSame(t, res, again)
	assert.Equal(t, res.TraceHash, again.TraceHash)
	banner := Banner(again, "replay-cmd", "abc123")
	line40 := strings.Split(again.Trace.Text(), "\n")[39]
	assert.Contains(t, banner, fmt.Sprintf(">>     40 %s\n", line40))
	assert.Contains(t, banner, "replay:  replay-cmd\n")
	assert.Contains(t, banner, "(abc123)")
	assert.Same(t, again, WholeTrace(t, again), "a whole trace is not run again")
}

// The shrink command, when given, follows the replay command; without it
// the banner has no shrink line.
func TestReportShrinkLine(t *testing.T) {
	rep := Report{Headline: "relaysim FAILED", TraceHash: "h", Replay: []string{"replay-cmd", "why"}, Shrink: "shrink-cmd", Commit: "c"}
	s := rep.String()
	assert.Contains(t, s, "replay:  replay-cmd\n         why\nshrink:  shrink-cmd\nnote:    c\n")
	rep.Shrink = ""
	assert.NotContains(t, rep.String(), "shrink:")
}

package sim

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

// textCountRun is the goroutine-profile reader the oracle used before
// parseGoroutines (the profile as a string, split into records, fmt.Sscan
// for the count): the reference parseGoroutines must agree with.
func textCountRun(text, id string) goroutineCounts {
	out := goroutineCounts{node: map[string]int{}, workers: map[string]int{}}
	want := fmt.Sprintf(`"relaysim":"%s"`, id)
	if _, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(text, "goroutine profile:") {
		text = rest
	}
	for _, rec := range strings.Split(text, "\n\n") {
		if !strings.Contains(rec, want) {
			continue
		}
		var n int
		fmt.Sscan(rec, &n)
		out.total += n
		_, after, ok := strings.Cut(rec, `"node":"`)
		if !ok {
			continue
		}
		tag, _, _ := strings.Cut(after, `"`)
		if tag == "" {
			continue
		}
		out.node[tag] += n
		if strings.Contains(rec, workerFrame) {
			out.workers[tag] += n
		}
	}
	return out
}

// parkLabelled starts n goroutines carrying labels, blocked until the
// returned function is called, at a depth of 1..depth frames.
func parkLabelled(n, depth int, labels ...string) func() {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var started sync.WaitGroup
	for i := range n {
		wg.Add(1)
		started.Add(1)
		ctx := pprof.WithLabels(context.Background(), pprof.Labels(labels...))
		go pprof.Do(ctx, pprof.Labels(), func(context.Context) {
			defer wg.Done()
			started.Done()
			parkAt(1+i%depth, stop)
		})
	}
	started.Wait()
	return func() { close(stop); wg.Wait() }
}

func parkAt(depth int, stop chan struct{}) {
	if depth == 0 {
		<-stop
		return
	}
	parkAt(depth-1, stop)
}

func TestParseGoroutinesAgreesWithText(t *testing.T) {
	defer parkLabelled(7, 3, "relaysim", "run-a", "node", "n1@1")()
	defer parkLabelled(5, 2, "relaysim", "run-a", "node", "n2@3")()
	defer parkLabelled(4, 1, "relaysim", "run-a")()
	defer parkLabelled(3, 2, "relaysim", "run-b", "node", "n1@1")()
	defer parkLabelled(2, 1, "node", "n1@1")()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	for _, id := range []string{"run-a", "run-b", "run-c"} {
		got := parseGoroutines(buf.Bytes(), id, false)
		require.Equal(t, textCountRun(buf.String(), id), got, id)
	}
	a := parseGoroutines(buf.Bytes(), "run-a", false)
	require.Equal(t, 16, a.total)
	require.Equal(t, map[string]int{"n1@1": 7, "n2@3": 5}, a.node)
	require.Empty(t, a.workers)

	// Hand-written records: a worker frame, a record without a count, an
	// unterminated label, blank lines between and after records.
	const prof = "goroutine profile: total 9\n" +
		"3 @ 0x1 0x2\n# labels: {\"node\":\"n1@2\", \"relaysim\":\"r\"}\n#\t0x1\tgithub.com/relaysim/relaysim/system.(*Executor).work+0x5\t/x.go:1\n\n" +
		"2 @ 0x3\n# labels: {\"node\":\"n1@2\", \"relaysim\":\"r\"}\n#\t0x3\tmain.f+0x1\t/x.go:2\n\n\n" +
		"@ 0x4\n# labels: {\"node\":\"n3@1\", \"relaysim\":\"r\"}\n\n" +
		"4 @ 0x5\n# labels: {\"relaysim\":\"r\", \"node\":\"n2@1\n\n" +
		"1 @ 0x6\n# labels: {\"relaysim\":\"r\"}\n\n"
	for _, id := range []string{"r", "x"} {
		require.Equal(t, textCountRun(prof, id), parseGoroutines([]byte(prof), id, false), id)
	}
	r := parseGoroutines([]byte(prof), "r", false)
	require.Equal(t, 10, r.total)
	require.Equal(t, map[string]int{"n1@2": 3}, r.workers)
}

// countRun reuses its buffers: a sample allocates what the profile costs
// inside runtime/pprof and the few map entries, not a copy of the text.
func BenchmarkCountRun(b *testing.B) {
	defer parkLabelled(300, 8, "relaysim", "run-a", "node", "n1@1")()
	defer parkLabelled(200, 5, "relaysim", "run-a", "node", "n2@1")()
	b.ReportAllocs()
	for b.Loop() {
		countRun("run-a")
	}
}

// The goroutine-profile cache is exact: whole runs (the default run with
// its faults, crashes and restarts, and the dense configuration) sample
// the same goroutine and worker counts, and replay the same trace, with it
// as without it; and it is used.
func TestCountRunCacheExact(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	setOff := func(off bool) {
		lastProfile.mu.Lock()
		lastProfile.off = off
		lastProfile.mu.Unlock()
	}
	hits := func() int {
		lastProfile.mu.Lock()
		defer lastProfile.mu.Unlock()
		return lastProfile.hits
	}
	defer setOff(false)
	used := 0
	for _, mode := range system.Modes {
		for s := 1; s <= seeds; s++ {
			for _, cfg := range []Config{DefaultConfig(), denseConfig(0, mode)} {
				cfg.Seed, cfg.Mode = Seed(s), mode
				setOff(false)
				before := hits()
				with := runOK(t, cfg)
				used += hits() - before
				setOff(true)
				without := runOK(t, cfg)
				require.NotEmpty(t, with.History.Samples)
				require.Equal(t, without.History.Samples, with.History.Samples, "seed %d mode %s", s, mode)
				require.Equal(t, without.TraceHash, with.TraceHash, "seed %d mode %s", s, mode)
			}
		}
	}
	require.Positive(t, used, "no sample reused the previous counts")
	t.Logf("%d samples reused the previous counts", used)
}

// What outlives a run is named from the same profile parser the samples
// use: one record per stack, the caller's own left out.
func TestLeftoversNamesWhatOutlivedTheRun(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	var got []string
	pprof.Do(context.Background(), pprof.Labels("relaysim", "leftover-test"), func(context.Context) {
		go func() { <-stop }() // inherits the run's label
		got = leftovers("leftover-test")
	})
	require.Len(t, got, 1)
	assert.Regexp(t, `^1 x github.com/relaysim/relaysim/sim.TestLeftoversNamesWhatOutlivedTheRun.func`, got[0])
	assert.Nil(t, leftovers("no-such-run"))
}

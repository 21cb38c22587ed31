package scenarios

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

var (
	exploreBench = flag.String("explore.bench", "", "write the model checker's measurements (naive vs reduced per story, mode, bound, crash budget) as a markdown table to this file (make explore)")
	benchCap     = flag.Duration("explore.cap", 30*time.Second, "CPU-time cap of each search in -explore.bench")
	benchDeeper  = flag.Int("explore.deeper", 1, "-explore.bench also measures each story at its pinned bound plus 1..N")
	benchBounds  = flag.String("explore.bounds", "", "-explore.bench measures each story at these preemption bounds (comma-separated) besides its pinned one, instead of -explore.deeper")
	benchNaive   = flag.Duration("explore.naive-cap", 0, "CPU-time cap of the naive search of an original story at its pinned bound, no crash budget, in -explore.bench (0: -explore.cap)")
)

// originalStories are the six stories the model checker began with; its
// reach is judged on them (issue 31: 10x at equal terminal states at the
// pinned bound), so -explore.naive-cap lets their naive searches finish.
var originalStories = map[string]bool{
	"send-races-join": true, "send-races-leave": true, "two-senders": true,
	"user-moves": true, "crash-during-fanout": true, "broken-stream-resend": true,
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSearch runs one search in a bubble of its own, capped at
// -explore.cap of the process's CPU time (not wall time: the machine is
// shared, and a cap in wall time would cut a search short by what other
// processes ran), and returns its report, wall and CPU time.
//
// The search runs on one P, as `relaysim explore` runs it: a search is
// sequential, and a second P only adds threads waking each other (a
// third of the CPU per schedule).
func benchSearch(t *testing.T, story, text string, mode system.Mode, o ExploreOptions, limit time.Duration) (*ExploreReport, time.Duration, time.Duration) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	start := time.Now()
	c0 := cpuTime()
	o.Stop = func(*ExploreReport) bool { return cpuTime()-c0 >= limit }
	var r *ExploreReport
	synctest.Test(t, func(t *testing.T) {
		rs, err := ExploreText(t, story, text, mode, o)
		require.NoError(t, err)
		r = rs[0]
	})
	return r, time.Since(start), cpuTime() - c0
}

// TestExploreBench measures the model checker (make explore): per story
// and mode, at the story's pinned bound, deeper bounds and with a crash
// budget, the naive search against the reduced one.
func TestExploreBench(t *testing.T) {
	if *exploreBench == "" {
		t.Skip("make explore runs it (-explore.bench FILE)")
	}
	f, err := os.Create(*exploreBench)
	require.NoError(t, err)
	defer f.Close()
	fmt.Fprintf(f, "| story | mode | bound | crashes | naive schedules | reduced schedules | reduction | terminal (naive/reduced) | exhausted (naive/reduced) | reduced wall | reduced schedules/s/core |\n")
	fmt.Fprintf(f, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	strip := regexp.MustCompile(`(?m)^explore bound=(\S+)`)
	for _, story := range StoryNames() {
		text, err := Story(story)
		require.NoError(t, err)
		m := strip.FindStringSubmatch(text)
		require.NotNil(t, m, "%s pins no bound", story)
		pinned, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		text = strip.ReplaceAllString(text, "explore")
		type config struct{ bound, crashes int }
		configs := []config{{pinned, 0}}
		if *benchBounds != "" {
			for _, f := range strings.Split(*benchBounds, ",") {
				b, err := strconv.Atoi(strings.TrimSpace(f))
				require.NoError(t, err, "-explore.bounds")
				if b != pinned {
					configs = append(configs, config{b, 0})
				}
			}
			slices.SortFunc(configs, func(a, b config) int { return a.bound - b.bound })
		} else {
			for k := 1; k <= *benchDeeper; k++ {
				configs = append(configs, config{pinned + k, 0})
			}
		}
		configs = append(configs, config{pinned, 1})
		for _, mode := range system.Modes {
			for _, cf := range configs {
				{
					b, crashes := cf.bound, cf.crashes
					o := DefaultExploreOptions()
					o.Bound = b
					o.Budget = map[string]int{sim.ExCrash: crashes}
					red, rw, rc := benchSearch(t, story, text, mode, o, *benchCap)
					o.Reduce = false
					limit := *benchCap
					if *benchNaive > 0 && originalStories[story] && b == pinned && crashes == 0 {
						limit = *benchNaive
					}
					nv, _, _ := benchSearch(t, story, text, mode, o, limit)
					yn := func(r *ExploreReport) string {
						if r.Exhausted {
							return "yes"
						}
						return "no (cap)"
					}
					prefix := ""
					if !nv.Exhausted {
						prefix = "≥ "
					}
					ratio := fmt.Sprintf("%s%.1fx", prefix, float64(nv.Schedules)/float64(max(red.Schedules, 1)))
					if !red.Exhausted {
						ratio = "n/a (reduced capped)"
					}
					fmt.Fprintf(f, "| %s | %s | %d | %d | %s%d | %d | %s | %d / %d | %s / %s | %.1fs | %.0f |\n",
						story, mode, b, crashes, prefix, nv.Schedules, red.Schedules, ratio, len(nv.Terminal), len(red.Terminal),
						yn(nv), yn(red), rw.Seconds(), float64(red.Schedules)/rc.Seconds())
					t.Logf("%s %s bound=%d crashes=%d naive=%d reduced=%d", story, mode, b, crashes, nv.Schedules, red.Schedules)
				}
			}
		}
	}
}

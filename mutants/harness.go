package mutants

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Select picks mutants by name (only: none means all) and then the part
// rotate ("i/n") keeps: every n-th mutant from the i-th, so that n
// consecutive CI runs with i = 1..n cover the whole catalog.
func Select(all []*Mutant, only []string, rotate string) ([]*Mutant, error) {
	picked := all
	if len(only) > 0 {
		picked = nil
		for _, name := range only {
			i := slices.IndexFunc(all, func(m *Mutant) bool { return m.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("no mutant named %q (relaysim mutants -list)", name)
			}
			picked = append(picked, all[i])
		}
	}
	i, n, err := ParseRotate(rotate)
	if err != nil {
		return nil, err
	}
	var out []*Mutant
	for k, m := range picked {
		if k%n == i-1 {
			out = append(out, m)
		}
	}
	return out, nil
}

// ParseRotate reads "i/n" with 1 <= i <= n; "" is "1/1".
func ParseRotate(s string) (i, n int, err error) {
	if s == "" {
		return 1, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("-rotate %q: want i/n with 1 <= i <= n", s)
	}
	return i, n, nil
}

// Run runs the mutants, jobs at a time, and returns their results in the
// order given. Each mutant gets the whole budget; running several at once
// on a small machine makes the seconds to catch grow.
func Run(ctx context.Context, o Options, ms []*Mutant, jobs int) []Result {
	results := make([]Result, len(ms))
	work := make(chan int)
	var wg sync.WaitGroup
	busy := newWorking(len(ms))
	if o.Progress != nil && o.Heartbeat > 0 {
		stop := busy.heartbeat(o.Progress, o.Heartbeat)
		defer stop()
	}
	for range max(1, jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				m := ms[k]
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "mutants: [%d/%d] %s (%s, %s)\n", k+1, len(ms), m.Name, m.Suite, m.Property)
				}
				busy.start(m.Name)
				results[k] = RunOne(ctx, o, m)
				busy.finish(m.Name)
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "mutants: %s: %s after %.1fs\n", m.Name, results[k].Verdict, results[k].Seconds)
				}
			}
		}()
	}
	for k := range ms {
		work <- k
	}
	close(work)
	wg.Wait()
	return results
}

// Report writes one row per mutant (SECONDS: searching, from the end of
// the build to the verdict; BUILD: compiling the mutant; HASH: the failing
// run's trace hash, which its REPLAY command prints again), then what each mutant that was not
// caught showed, and as its last line "mutants: <n> caught: <k>". It
// returns k.
func Report(w io.Writer, rs []Result) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MUTANT\tVERDICT\tPROPERTY\tSECONDS\tBUILD\tRUNS\tSHRUNK\tHASH\tREPLAY")
	caught := 0
	for _, r := range rs {
		if r.Verdict.Kind == Caught {
			caught++
		}
		replay := r.Replay
		if replay == "" {
			replay = "-"
		}
		hash := strings.ReplaceAll(r.TraceHash, " ", ",") // equiv: one per mode
		if hash == "" {
			hash = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%d\t%s\t%s\t%s\n", r.Mutant.Name, r.Verdict, r.Mutant.Property, r.Seconds-r.Build, r.Build, r.Runs, r.Shrunk, hash, replay)
	}
	tw.Flush()
	for _, r := range rs {
		if r.Verdict.Kind != Caught && r.Verdict.Evidence != "" {
			fmt.Fprintf(w, "%s (%s): %s\n", r.Mutant.Name, r.Verdict, r.Verdict.Evidence)
		}
	}
	fmt.Fprintf(w, "mutants: %d caught: %d\n", len(rs), caught)
	return caught
}

// working is what Run is doing, for its heartbeat: the mutants in flight
// (since when) and how many are done.
type working struct {
	mu     sync.Mutex
	since  map[string]time.Time
	done   int
	total  int
	opened time.Time
}

func newWorking(total int) *working {
	return &working{since: map[string]time.Time{}, total: total, opened: time.Now()}
}

func (w *working) start(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.since[name] = time.Now()
}

func (w *working) finish(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.since, name)
	w.done++
}

// line says what is in flight, e.g. "mutants: 3/53 done after 4m10s;
// working on gap-not-filled (1m30s), stream-skip-gap (20s)".
func (w *working) line() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.since))
	for n := range w.since {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%s (%s)", n, time.Since(w.since[n]).Round(time.Second))
	}
	return fmt.Sprintf("mutants: %d/%d done after %s; working on %s", w.done, w.total, time.Since(w.opened).Round(time.Second), strings.Join(names, ", "))
}

// heartbeat writes line to p every period until the returned stop is
// called: a long build or search is never silent in a CI log.
func (w *working) heartbeat(p io.Writer, period time.Duration) (stop func()) {
	t := time.NewTicker(period)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-t.C:
				fmt.Fprintln(p, w.line())
			case <-quit:
				return
			}
		}
	}()
	return func() {
		t.Stop()
		close(quit)
		wg.Wait()
	}
}

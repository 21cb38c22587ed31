package sim

import (
	"bytes"
	"fmt"
	"maps"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
)

// This file counts a run's goroutines from outside the relay: per node
// incarnation (pprof labels every goroutine it starts inherits) and, among
// them, the executor's workers.

// goroutineCounts counts the run's goroutines per node label (every
// goroutine a node incarnation starts inherits its label) and, among them,
// the executor's worker goroutines (a worker's stack holds Executor.work).
type goroutineCounts struct {
	total   int
	node    map[string]int // by incarnation tag
	workers map[string]int
	// stacks, when asked for, names each record: "N x function" (its
	// first function that is not the runtime's), but the caller's own
	// (leftovers).
	stacks []string
}

const workerFrame = "system.(*Executor).work"

// profileBufs holds the buffers the goroutine profile is written into: one
// profile of a run is some 40 KB of text, taken at every sample, and growing
// a new buffer for each was a tenth of a run's allocation.
var profileBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// countRun counts run id's goroutines from the process's goroutine
// profile, or gives back the counts of the previous profile when it can
// prove they are the same (see profileCache).
func countRun(id string) goroutineCounts {
	created, live, known := goroutineTotals()
	if g, ok := lastProfile.get(id, created, live, known); ok {
		return g
	}
	buf := profileBufs.Get().(*bytes.Buffer)
	defer profileBufs.Put(buf)
	buf.Reset()
	if err := pprof.Lookup("goroutine").WriteTo(buf, 1); err != nil {
		return goroutineCounts{node: map[string]int{}, workers: map[string]int{}}
	}
	g := parseGoroutines(buf.Bytes(), id, false)
	if known {
		lastProfile.put(id, created, live, g)
	}
	return g
}

// profileCache keeps the last counts taken, with the process's goroutine
// totals read just before their profile. Taking the profile (it unwinds
// every goroutine's stack) was the largest cost of a default run; most
// samples of a run find no goroutine started or ended since the last one.
//
// Why reusing them is exact: the runtime counts every goroutine ever
// created (/sched/goroutines-created), and a stopped world counts the live
// ones exactly (goroutineTotals). If neither moved since the totals read
// before the previous profile, no goroutine was created after that read, and, none
// created, none ended either (the live count could only have fallen); so
// the profile would list the same goroutines. What it counts of each does
// not change over a goroutine's life: the run and node labels are
// inherited at creation, and in this process only the driver goroutine
// relabels itself (Run and NewCluster before any sample, startIncarnation
// around starting a node, which creates goroutines); a worker runs
// Executor.work from its first frame to its exit, and profiles keep 128
// frames of a stack, so the frame is always seen. A creation or an end
// anywhere in the process, between the read and the profile included,
// moves a total and forces a new profile. TestCountRunCacheExact checks
// the argument on whole runs: every sample the same with and without it.
type profileCache struct {
	mu            sync.Mutex
	off           bool // tests: always take the profile
	id            string
	created, live uint64
	counts        goroutineCounts
	valid         bool
	hits          int // samples that reused the counts (read by tests)
}

var lastProfile profileCache

func (c *profileCache) get(id string, created, live uint64, known bool) (goroutineCounts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || !known || !c.valid || c.id != id || c.created != created || c.live != live {
		return goroutineCounts{}, false
	}
	c.hits++
	return c.counts.clone(), true
}

func (c *profileCache) put(id string, created, live uint64, g goroutineCounts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.created, c.live, c.counts, c.valid = id, created, live, g.clone(), true
}

func (g goroutineCounts) clone() goroutineCounts {
	return goroutineCounts{total: g.total, node: maps.Clone(g.node), workers: maps.Clone(g.workers)}
}

// goroutineTotals reads how many goroutines the process has created (the
// runtime's counter) and how many are alive, the latter from
// runtime.GoroutineProfile's count, which stops the world: a goroutine
// that has just ended may still be counted by the runtime's live metric or
// NumGoroutine when the bubble has already woken the driver, but not once
// the world has stopped. known is false when the runtime does not offer
// the counter.
func goroutineTotals() (created, live uint64, known bool) {
	s := [1]metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, 0, false
	}
	var one [1]runtime.StackRecord
	n, _ := runtime.GoroutineProfile(one[:])
	return s[0].Value.Uint64(), uint64(n), true
}

// parseGoroutines counts, in a goroutine profile written with debug=1, the
// goroutines of run id: each record ("N @ pc...", its "# labels: {...}" line
// and its frames, records separated by a blank line) that carries the run's
// label adds its N to the total, to its node label's count and, when one of
// its frames is the executor's worker loop, to the node's workers (with
// stacks, also its name: see goroutineCounts.stacks). It reads
// the profile in place: no copy of the text, no slice of its records.
func parseGoroutines(text []byte, id string, stacks bool) goroutineCounts {
	out := goroutineCounts{node: map[string]int{}, workers: map[string]int{}}
	want := []byte(`"relaysim":"` + id + `"`)
	if bytes.HasPrefix(text, []byte("goroutine profile:")) {
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:] // the header line, not a record
		}
	}
	sep := []byte("\n\n")
	for len(text) > 0 {
		rec := text
		if i := bytes.Index(text, sep); i >= 0 {
			rec, text = text[:i], text[i+len(sep):]
		} else {
			text = nil
		}
		if !bytes.Contains(rec, want) {
			continue
		}
		n := leadingCount(rec)
		out.total += n
		if stacks && !bytes.Contains(rec, []byte("sim.leftovers")) {
			if fn := firstFunc(rec); fn != nil {
				out.stacks = append(out.stacks, fmt.Sprintf("%d x %s", n, fn))
			}
		}
		tag := labelValue(rec, "node")
		if len(tag) == 0 {
			continue
		}
		out.node[string(tag)] += n
		if bytes.Contains(rec, []byte(workerFrame)) {
			out.workers[string(tag)] += n
		}
	}
	return out
}

// leadingCount reads a record's goroutine count, the decimal number its
// first line starts with (after any blanks), as fmt.Sscan did here before;
// 0 if there is none or it does not fit an int.
func leadingCount(rec []byte) int {
	rec = bytes.TrimLeft(rec, " \t\r\n")
	end := 0
	for end < len(rec) && rec[end] >= '0' && rec[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(string(rec[:end]))
	if err != nil {
		return 0
	}
	return n
}

// labelValue extracts a pprof label's value from a profile record's
// "# labels: {...}" line.
func labelValue(rec []byte, key string) []byte {
	i := bytes.Index(rec, []byte(`"`+key+`":"`))
	if i < 0 {
		return nil
	}
	after := rec[i+len(key)+4:]
	if j := bytes.IndexByte(after, '"'); j >= 0 {
		return after[:j]
	}
	return after
}

// leftovers describes the run's goroutines still alive after teardown
// (other than the caller): "N x function", the first function of each
// stack that is not the runtime's.
func leftovers(id string) []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return nil
	}
	g := parseGoroutines(buf.Bytes(), id, true)
	if g.total <= 1 {
		return nil
	}
	return g.stacks
}

// firstFunc is the first function of a profile record's stack that is not
// the runtime's, internal or sync's ("" if none).
func firstFunc(rec []byte) []byte {
	lines := bytes.Split(rec, []byte("\n"))
	for _, l := range lines[1:] {
		if f := bytes.Fields(l); len(f) >= 3 && string(f[0]) == "#" && bytes.HasPrefix(f[1], []byte("0x")) {
			if !bytes.HasPrefix(f[2], []byte("runtime.")) && !bytes.HasPrefix(f[2], []byte("internal/")) && !bytes.HasPrefix(f[2], []byte("sync.")) {
				return f[2]
			}
		}
	}
	return nil
}

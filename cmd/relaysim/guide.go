package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relaysim/relaysim/sim"
)

// relaysim guide: a sweep steered toward what plain sweeps never reach
// (docs/guided.md). It keeps a corpus of runs, each a seed and the swarm
// settings it drew (a run command line: guide_genes.go), that reached a
// code probe at a hit count no run before it had (AFL's buckets: 1, 2-3,
// 4-7, 8+), or failed. New runs mostly mutate a corpus entry's settings
// with a fresh seed, entries that hit rare probes drawn more often (a
// failing entry is kept but never mutated); some are fresh draws. The search is seeded: the same -seed, -runs and corpus
// give the same runs, whatever -j, because it draws a batch of runs,
// runs it on the sweep's workers, and reads the batch's typed summaries
// in the order it drew them before it draws the next.

// guideBatch is how many runs a search draws before it reads their
// results: a constant, so that -j changes no decision.
const guideBatch = 8

// guideFresh is the default share of a search's runs that are fresh
// draws rather than mutants of a corpus entry (-fresh; all of them while
// the corpus is empty); half of the fresh are plain sweep runs (every
// gene at run's default), half random swarms of settings.
const guideFresh = 0.2

// corpusEntry is one file of the corpus.
type corpusEntry struct {
	name   string // its file name
	s      settings
	probes map[string]int // what it reached: probe -> hits
	failed string         // "" for a passing run, else its class and properties
}

// feature is what counts as reached: a probe at a bucket of its hits.
type feature struct {
	probe  string
	bucket int
}

// bucket is AFL's bucket of a hit count: 1, 2-3, 4-7, 8+ (0: not hit).
func bucket(n int) int {
	switch {
	case n <= 0:
		return 0
	case n == 1:
		return 1
	case n <= 3:
		return 2
	case n <= 7:
		return 3
	}
	return 4
}

var bucketNames = []string{"", "1", "2-3", "4-7", "8+"}

// featuresOf are the (probe, bucket) pairs of a run's probes, by name.
func featuresOf(probes map[string]int) []feature {
	var out []feature
	for _, name := range sortedKeys(probes) {
		if b := bucket(probes[name]); b > 0 {
			out = append(out, feature{name, b})
		}
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// guideOpts are a search's flags.
type guideOpts struct {
	sweep  sweepOpts
	corpus string
	runs   int
	seed   sim.Seed
	modes  []string
	fresh  float64
}

func parseGuide(args []string, usage io.Writer) (*guideOpts, error) {
	fs := newFlagSet("guide")
	var o guideOpts
	fs.StringVar(&o.corpus, "corpus", "", "the corpus directory: read at the start (a search resumes from it), each new entry written as a file of its own (created if missing)")
	fs.Float64Var(&o.fresh, "fresh", guideFresh, "share of runs drawn fresh (half plain sweep runs, half random settings) rather than mutated from the corpus; 1 turns the guidance off (the control in docs/guided.md)")
	fs.IntVar(&o.runs, "runs", 100, "runs to make (the search's budget)")
	seed := fs.String("seed", "1", "the search's own seed (hex or decimal): the same seed, -runs and corpus make the same runs")
	mode := fs.String("mode", "all", "relay modes the runs draw from: single, bulk, stream, both (single and bulk) or all")
	fs.IntVar(&o.sweep.jobs, "j", runtime.GOMAXPROCS(0), "runs in parallel (worker processes, as a sweep's); changes no decision of the search")
	fs.DurationVar(&o.sweep.timeout, "job-timeout", 10*time.Minute, "wall time after which a run counts as hung and its process is killed")
	fs.BoolVar(&o.sweep.isolate, "isolate", false, "run every run in a fresh process of its own")
	fs.String("mutant", "", mutantFlagUsage) // taken out before parsing: main.go
	fs.String("cover", "", coverFlagUsage)   // taken out before parsing: main.go, cover.go
	if err := parseFlags(fs, args, usage); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.seed, err = sim.ParseSeed(*seed); err != nil {
		return nil, fmt.Errorf("-seed: %w", err)
	}
	switch *mode {
	case "single", "bulk", "stream":
		o.modes = []string{*mode}
	case "both":
		o.modes = []string{"single", "bulk"}
	case "all":
		o.modes = []string{"single", "bulk", "stream"}
	default:
		return nil, fmt.Errorf("-mode %q: want single, bulk, stream, both (single and bulk) or all", *mode)
	}
	switch {
	case o.corpus == "":
		return nil, errors.New("-corpus DIR is required (the corpus the search reads and grows)")
	case o.fresh < 0 || o.fresh > 1:
		return nil, fmt.Errorf("-fresh must be a share in 0..1, got %v", o.fresh)
	case o.runs < 1:
		return nil, fmt.Errorf("-runs must be at least 1, got %d", o.runs)
	case o.sweep.jobs < 1:
		return nil, fmt.Errorf("-j must be at least 1, got %d", o.sweep.jobs)
	case o.sweep.timeout <= 0:
		return nil, fmt.Errorf("-job-timeout must be positive, got %s", o.sweep.timeout)
	}
	return &o, nil
}

// search is a guided search's state.
type search struct {
	o      *guideOpts
	rng    *rand.Rand
	corpus []*corpusEntry
	names  map[string]bool  // the corpus' file names
	seen   map[feature]bool // every (probe, bucket) some entry reached
	hits   map[string]int   // corpus entries and runs that hit each probe
	start  int              // corpus entries at the start
	reach  int              // entries this search added for new reach
	failed int              // entries this search added for failing
}

func newSearch(o *guideOpts, entries []*corpusEntry) *search {
	s := &search{o: o, rng: rand.New(rand.NewPCG(uint64(o.seed), 0x6775696465)), names: map[string]bool{},
		seen: map[feature]bool{}, hits: map[string]int{}, start: len(entries)}
	for _, e := range entries {
		s.admit(e)
	}
	return s
}

// admit adds an entry to the corpus in memory.
func (s *search) admit(e *corpusEntry) {
	s.corpus = append(s.corpus, e)
	s.names[e.name] = true
	for _, f := range featuresOf(e.probes) {
		s.seen[f] = true
	}
	for _, name := range sortedKeys(e.probes) {
		s.hits[name]++
	}
}

// weight is how often an entry is drawn as a parent: more for each probe
// it hit that few runs hit.
func (s *search) weight(e *corpusEntry) float64 {
	w := 1.0
	for _, name := range sortedKeys(e.probes) { // in order: float sums
		if e.probes[name] > 0 {
			w += 8 / float64(max(1, s.hits[name]))
		}
	}
	return w
}

// draw is the next run: a fresh draw or a mutant of a corpus entry, and
// where it came from.
func (s *search) draw() (settings, string) {
	if len(s.corpus) == 0 || s.rng.Float64() < s.o.fresh {
		if s.rng.IntN(2) == 0 {
			return plainSettings(sim.Seed(s.rng.Uint64()), s.o.modes[s.rng.IntN(len(s.o.modes))]), "fresh plain"
		}
		return randomSettings(s.rng, s.o.modes), "fresh swarm"
	}
	// A failing entry is kept, never mutated: its neighbours fail alike
	// and would crowd out the search (AFL keeps its crashes apart too).
	ws := make([]float64, len(s.corpus))
	total := 0.0
	for i, e := range s.corpus {
		if e.failed == "" {
			ws[i] = s.weight(e)
			total += ws[i]
		}
	}
	if total == 0 {
		return randomSettings(s.rng, s.o.modes), "fresh swarm"
	}
	x := s.rng.Float64() * total
	var parent *corpusEntry
	for i, w := range ws {
		if w > 0 {
			parent = s.corpus[i]
		}
		if x < w {
			break
		}
		x -= w
	}
	return parent.s.mutate(s.rng, s.o.modes), "mutant of " + parent.name
}

// record reads a finished run: it enters the corpus when it reached a
// (probe, bucket) no entry had, or failed. It returns what it added.
func (s *search) record(st settings, j *sweepJob) (*corpusEntry, []feature) {
	var probes map[string]int
	if j.summary != nil {
		probes = j.summary.Probes
	}
	var fresh []feature
	for _, f := range featuresOf(probes) {
		if !s.seen[f] {
			fresh = append(fresh, f)
		}
	}
	for name, n := range probes {
		if n > 0 {
			s.hits[name]++
		}
	}
	if len(fresh) == 0 && j.ok {
		return nil, nil
	}
	e := &corpusEntry{name: entryName(st), s: st, probes: probes}
	if !j.ok {
		e.failed = classOf(j.code)
		if j.summary != nil && len(j.summary.Violations) > 0 {
			e.failed += " " + strings.Join(j.summary.Violations, ",")
		}
	}
	if s.names[e.name] { // the same run again: already kept
		return nil, fresh
	}
	for _, f := range fresh {
		s.seen[f] = true
	}
	s.corpus = append(s.corpus, e)
	s.names[e.name] = true
	if j.ok {
		s.reach++
	} else {
		s.failed++
	}
	return e, fresh
}

// entryName is an entry's file name: a hash of its command line, as Go's
// fuzzing names its corpus files.
func entryName(s settings) string {
	sum := sha256.Sum256([]byte(s.String()))
	return hex.EncodeToString(sum[:8])
}

// entryText is an entry's file: what it reached as comments, then its run
// command line.
func entryText(e *corpusEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# relaysim guide corpus entry; `go tool relaysim` + the last line replays it\n")
	if e.failed != "" {
		fmt.Fprintf(&b, "# failed: %s\n", e.failed)
	}
	var parts []string
	for _, name := range sortedKeys(e.probes) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, e.probes[name]))
	}
	fmt.Fprintf(&b, "# probes: %s\n", strings.Join(parts, " "))
	fmt.Fprintf(&b, "%s\n", e.s)
	return b.String()
}

// parseEntry reads one corpus file; an error names file:line.
func parseEntry(path, text string) (*corpusEntry, error) {
	e := &corpusEntry{name: filepath.Base(path), probes: map[string]int{}}
	found := false
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		at := fmt.Sprintf("%s:%d", path, i+1)
		switch {
		case line == "":
		case strings.HasPrefix(line, "# probes:"):
			for _, p := range strings.Fields(strings.TrimPrefix(line, "# probes:")) {
				name, count, ok := strings.Cut(p, "=")
				n, err := strconv.Atoi(count)
				if !ok || name == "" || err != nil || n < 1 {
					return nil, fmt.Errorf("%s: probe %q: want name=hits (hits >= 1)", at, p)
				}
				e.probes[name] = n
			}
		case strings.HasPrefix(line, "# failed:"):
			e.failed = strings.TrimSpace(strings.TrimPrefix(line, "# failed:"))
		case strings.HasPrefix(line, "#"):
		case found:
			return nil, fmt.Errorf("%s: a second run command line (an entry holds one)", at)
		default:
			s, err := parseSettings(line)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", at, err)
			}
			e.s, found = s, true
		}
	}
	if !found {
		return nil, fmt.Errorf("%s:1: no run command line", path)
	}
	return e, nil
}

// loadCorpus reads every file of dir, in name order (a missing dir is an
// empty corpus).
func loadCorpus(dir string) ([]*corpusEntry, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*corpusEntry
	for _, de := range des { // ReadDir sorts by name
		if de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		e, err := parseEntry(path, string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// cmdGuide runs a guided search.
func cmdGuide(args []string, stdout, stderr io.Writer) int {
	o, err := parseGuide(args, stdout)
	if err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "guide", err)
	}
	entries, err := loadCorpus(o.corpus)
	if err != nil {
		return usageError(stderr, "guide", err)
	}
	if err := os.MkdirAll(o.corpus, 0o755); err != nil {
		fmt.Fprintf(stderr, "relaysim guide: %v\n", err)
		return exitHarness
	}
	s := newSearch(o, entries)
	fmt.Fprintf(stdout, "guide: seed %s, %d runs in %s; corpus %s: %d entries, %d (probe, bucket) pairs reached\n",
		o.seed, o.runs, strings.Join(o.modes, ", "), o.corpus, len(entries), len(s.seen))
	start := time.Now()
	prog := newProgress(stderr, o.runs, shard{I: 1, N: 1})
	prog.label = "guide"
	stop := startHeartbeat(stderr, heartbeatEvery, prog.label, &prog.status)
	// Each run gets one P (unless the caller set GOMAXPROCS), whatever -j:
	// a probe hit off the scheduled path (at teardown) could depend on how
	// many Ps ran it, and the search's decisions must not depend on -j.
	if os.Getenv("GOMAXPROCS") == "" {
		os.Setenv("GOMAXPROCS", "1")
		defer os.Unsetenv("GOMAXPROCS")
	}
	p := newPool(o.sweep, nil)
	var all []*sweepJob
	code := exitOK
	for len(all) < o.runs {
		n := min(guideBatch, o.runs-len(all))
		batch := make([]*sweepJob, n)
		sets := make([]settings, n)
		from := make([]string, n)
		for i := range batch {
			sets[i], from[i] = s.draw()
			batch[i] = &sweepJob{seed: sets[i].seed, mode: sets[i].mode, cmd: sets[i].args()}
		}
		p.run(batch, prog)
		for i, j := range batch {
			e, fresh := s.record(sets[i], j)
			mark := "  "
			switch {
			case !j.ok:
				mark = "F "
			case e != nil:
				mark = "+ "
			}
			line := fmt.Sprintf("%s%d %s: %s relaysim %s", mark, len(all)+i+1, from[i], goRun(), sets[i])
			if e != nil {
				line += "  -> " + e.name
			}
			if len(fresh) > 0 {
				var fs []string
				for _, f := range fresh {
					fs = append(fs, f.probe+"@"+bucketNames[f.bucket])
				}
				line += " new: " + strings.Join(fs, " ")
			}
			fmt.Fprintln(stdout, line)
			if e != nil {
				path := filepath.Join(o.corpus, e.name)
				if err := os.WriteFile(path, []byte(entryText(e)), 0o644); err != nil {
					fmt.Fprintf(stderr, "relaysim guide: %v\n", err)
					code = exitHarness
				}
			}
		}
		all = append(all, batch...)
	}
	prog.finish()
	cpu := p.close()
	stop()
	fmt.Fprintln(stderr, strings.Replace(speedLine(len(all), time.Since(start), cpu, o.sweep), "sweep:", "guide:", 1))
	return worse(code, guideVerdict(stdout, s, all))
}

// guideVerdict prints a finished search's failures (as a sweep's), its
// probe tally, the corpus' growth and the last line, and returns the exit
// code.
func guideVerdict(stdout io.Writer, s *search, all []*sweepJob) int {
	failed, code := 0, exitOK
	for _, j := range all {
		if !j.ok {
			failed++
			code = worse(code, j.code)
			fmt.Fprintf(stdout, "FAIL seed=%s mode=%s trace-hash=%s\n  replay: %s\n  shrink: %s\n", j.seed, j.label(), j.hash, j.replay(nil), shrinkOf(j.replay(nil)))
			if line := j.evidence(); line != "" {
				fmt.Fprintf(stdout, "  %s\n", line)
			}
		}
	}
	if line := sweepCoverage(all); line != "" {
		fmt.Fprintln(stdout, line)
	}
	probes := tallyProbes(all)
	probes.print(stdout)
	if activeCover != nil { // -cover DIR: relaysim cover merges the tallies too
		if err := probes.save(activeCover.data); err != nil {
			fmt.Fprintf(os.Stderr, "relaysim guide: -cover: %v\n", err)
		}
	}
	if line := sweepCoverLine(probes.share()); line != "" {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "corpus: %s: %d entries, %d at the start, +%d for new reach, +%d failing; %d (probe, bucket) pairs reached\n",
		s.o.corpus, len(s.corpus), s.start, s.reach, s.failed, len(s.seen))
	fmt.Fprintf(stdout, "runs: %d failed: %d\n", len(all), failed)
	if code != exitOK && code != exitFail {
		code = exitHarness
	}
	return code
}

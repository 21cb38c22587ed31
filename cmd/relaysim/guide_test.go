package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guideWorker is a fake sweep worker for guided searches: each run's
// probes follow from its command line (stream mode, a wide alphabet, a
// large crash bound, a scheduler, a pool size), and a churn-only run fails.
const guideWorker = `if [ "$1" = sweep-worker ]; then
while read job; do
  p='"session.lock-waited":1'
  case "$job" in *stream*) p="$p"',"stream.broken":2';; esac
  case "$job" in *alphabet=wide*) p="$p"',"chat.bad-name-refused":9';; esac
  case "$job" in *max-crashes=4*) p="$p"',"executor.caller-runs":1';; esac
  case "$job" in *scheduler=pct*) p="$p"',"session.lock-waited":5';; esac
  case "$job" in *max=12*) p="$p"',"executor.pool-at-max":3';; esac
  case "$job" in
  *churn-only=true*) code=1; s=violation; v='["no-loss"]'; e=',"evidence":["violated: no-loss: lost"]';;
  *) code=0; s=ok; v='[]'; e='';;
  esac
  echo "{\"code\":$code,\"summary\":{\"summary\":\"$s\",\"exit\":$code,\"command\":\"run\",\"violations\":$v,\"trace_hash\":\"abc\",\"probes\":{$p}$e},\"out\":\"\"}"
done
exit 0
fi
exit 3`

// guide runs a search on the fake worker; it returns its exit code and
// stdout with the corpus directory written as DIR.
func guide(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"guide", "-corpus", dir}, args...), &out, &errb)
	return code, strings.ReplaceAll(out.String(), dir, "DIR"), errb.String()
}

// runLines are a search's lines that name its runs.
func runLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " relaysim run -seed ") {
			lines = append(lines, l)
		}
	}
	return lines
}

func corpusFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]string{}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		files[de.Name()] = string(b)
	}
	return files
}

// The same seed, budget and corpus make the same runs in the same order,
// whatever -j, and the same corpus; another seed makes other runs.
func TestGuideIsDeterministic(t *testing.T) {
	fakeSelf(t, guideWorker)
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	codeA, outA, _ := guide(t, a, "-runs", "40", "-seed", "7", "-mode", "all", "-j", "1")
	codeB, outB, _ := guide(t, b, "-runs", "40", "-seed", "7", "-mode", "all", "-j", "2")
	_, outC, _ := guide(t, c, "-runs", "40", "-seed", "8", "-mode", "all", "-j", "2")
	assert.Equal(t, codeA, codeB)
	assert.Equal(t, outA, outB)
	assert.Len(t, runLines(outA), 40)
	assert.NotEqual(t, runLines(outA), runLines(outC))
	assert.Equal(t, corpusFiles(t, a), corpusFiles(t, b))
	lines := strings.Split(strings.TrimSpace(outA), "\n")
	assert.Regexp(t, `^runs: 40 failed: \d+$`, lines[len(lines)-1])
	assert.Contains(t, outA, "\nprobes: ")
	assert.Contains(t, outA, "\ncorpus: DIR: ")
}

// A search resumes from its corpus: it reads what the entries reached,
// adds none of them again, and goes on from there; the same seed on the
// same corpus makes the same runs again.
func TestGuideResumesFromItsCorpus(t *testing.T) {
	fakeSelf(t, guideWorker)
	dir := t.TempDir()
	_, first, _ := guide(t, dir, "-runs", "24", "-mode", "stream", "-j", "2")
	before := corpusFiles(t, dir)
	require.NotEmpty(t, before)
	// Copies of the corpus, for a second search twice.
	other := t.TempDir()
	for name, text := range before {
		require.NoError(t, os.WriteFile(filepath.Join(other, name), []byte(text), 0o644))
	}
	_, second, _ := guide(t, dir, "-runs", "24", "-mode", "stream", "-seed", "2", "-j", "2")
	_, again, _ := guide(t, other, "-runs", "24", "-mode", "stream", "-seed", "2", "-j", "1")
	assert.Equal(t, second, again)
	assert.Contains(t, second, "corpus DIR: "+strconv.Itoa(len(before))+" entries")
	after := corpusFiles(t, dir)
	for name, text := range before {
		assert.Equal(t, text, after[name], "entry %s changed", name)
	}
	added := 0
	for _, l := range runLines(second) {
		if strings.Contains(l, " -> ") {
			added++
			name := l[strings.LastIndex(l, " -> ")+4:]
			name, _, _ = strings.Cut(name, " ")
			_, old := before[name]
			assert.False(t, old, "re-added %s", name)
		}
	}
	assert.Equal(t, len(before)+added, len(after))
	// The first search's pairs are known: none of its "new:" pairs is new
	// again.
	for _, l := range runLines(second) {
		for _, f := range newPairs(l) {
			assert.NotContains(t, first, " "+f, "pair %s reported new again", f)
		}
	}
}

// newPairs are the (probe, bucket) pairs a run line says are new.
func newPairs(line string) []string {
	_, after, ok := strings.Cut(line, " new: ")
	if !ok {
		return nil
	}
	return strings.Fields(after)
}

// A failing run fails the search (exit 1), is listed as a sweep lists
// one, with its replay command, and is kept in the corpus.
func TestGuideFailingRunFailsTheSearch(t *testing.T) {
	fakeSelf(t, guideWorker)
	dir := t.TempDir()
	code, out, _ := guide(t, dir, "-runs", "40", "-mode", "bulk", "-seed", "3", "-j", "2")
	require.Equal(t, exitFail, code, out)
	assert.Contains(t, out, "\nFAIL seed=")
	assert.Contains(t, out, "  replay: go tool relaysim replay -seed ")
	assert.Contains(t, out, "-churn-only=true")
	assert.Contains(t, out, "  violated: no-loss: lost\n")
	kept := 0
	for _, text := range corpusFiles(t, dir) {
		if strings.Contains(text, "# failed: violation no-loss\n") {
			kept++
		}
	}
	assert.Positive(t, kept)
}

// A corpus file that does not parse is a usage error of one line naming
// the file and line; so are bad flags.
func TestGuideUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "0123")
	require.NoError(t, os.WriteFile(bad, []byte("# probes: a=1\nrun -seed 0x2a -mode bulk -max-crashes=x\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-corpus", dir}, bad + ":2: -max-crashes \"x\": want a whole number such as 3"},
		{[]string{"-corpus", t.TempDir(), "-runs", "0"}, "-runs must be at least 1, got 0"},
		{[]string{"-corpus", t.TempDir(), "-mode", "fast"}, `-mode "fast": want single`},
		{[]string{"-runs", "3"}, "-corpus DIR is required"},
		{[]string{"-corpus", t.TempDir(), "-fresh", "2"}, "-fresh must be a share in 0..1, got 2"},
		{[]string{"-corpus", t.TempDir(), "-seeds", "1-3"}, "no flag -seeds (did you mean -seed?)"},
		{[]string{"-corpus", t.TempDir(), "-seed", "zz"}, "-seed: "},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"guide"}, tc.args...), &out, &errb)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Contains(t, errb.String(), tc.want, tc.args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
		assert.Empty(t, out.String())
	}
	for _, tc := range []struct{ text, want string }{
		{"# probes: a=0\nrun -seed 1 -mode bulk\n", ":1: probe \"a=0\""},
		{"# nothing\n", ":1: no run command line"},
		{"run -seed 1 -mode bulk\nrun -seed 2 -mode bulk\n", ":2: a second run command line"},
		{"run -seed 1 -mode bulk -trace=x\n", ":1: -trace is not a flag a guided search sets"},
		{"sweep -seeds 1-2\n", ":1: want a run command line"},
		{"run -mode bulk\n", ":1: a run command line names -seed and -mode"},
		{"run -seed 1 -mode fast\n", ":1: unknown mode"},
	} {
		_, err := parseEntry("f", tc.text)
		if assert.Error(t, err, tc.text) {
			assert.Contains(t, err.Error(), "f"+tc.want)
		}
	}
}

// Every value a gene draws is one run accepts, and a drawn run's command
// line reads back to the same settings.
func TestGuideSettingsParseBack(t *testing.T) {
	for i, g := range genes {
		for _, v := range g.values {
			s := plainSettings(1, "stream")
			s.vals[i] = v
			s.fix()
			_, err := parseSettings(s.String())
			assert.NoError(t, err, "-%s=%s", g.flag, v)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	modes := []string{"single", "bulk", "stream"}
	s := randomSettings(r, modes)
	for range 300 {
		back, err := parseSettings(s.String())
		require.NoError(t, err, s.String())
		assert.Equal(t, s, back)
		if r.IntN(4) == 0 {
			s = randomSettings(r, modes)
		} else {
			s = s.mutate(r, modes)
		}
	}
	e := &corpusEntry{name: "x", s: s, probes: map[string]int{"b": 2, "a": 9}, failed: "violation no-loss"}
	back, err := parseEntry("x", entryText(e))
	require.NoError(t, err)
	assert.Equal(t, e, back)
	assert.Equal(t, []int{0, 1, 2, 2, 3, 3, 3, 3, 4, 4}, []int{bucket(0), bucket(1), bucket(2), bucket(3), bucket(4), bucket(5), bucket(6), bucket(7), bucket(8), bucket(900)})
}

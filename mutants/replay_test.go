package mutants

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var replayFlag = flag.String("mutants.replay", "", "run this sweep mutant and paste its replay command (slow; make mutants runs it with gap-not-filled)")

// A caught mutant's printed replay command, pasted into a shell, fails
// again with the same trace hash: the report's command is the one a
// developer needs, not an approximation of it.
func TestReplayCommand(t *testing.T) {
	if *replayFlag == "" {
		t.Skip("slow: runs with -mutants.replay=NAME (make mutants)")
	}
	all, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Select(all, []string{*replayFlag}, "")
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Suite != SuiteSweep {
		t.Fatalf("%s runs suite %s; the replay check needs a sweep mutant", ms[0].Name, ms[0].Suite)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	res := RunOne(context.Background(), Options{Root: root, Budget: 5 * time.Minute}, ms[0])
	if res.Verdict.Kind != Caught || res.TraceHash == "" {
		t.Fatalf("%s: %s (%s); want caught with a trace hash", ms[0].Name, res.Verdict, res.Verdict.Evidence)
	}
	t.Logf("report says: %s (trace-hash %s)", res.Replay, res.TraceHash)
	// The table's command, then the command the banner it prints names:
	// each, pasted into a shell without the harness's environment, builds
	// the mutant again and fails the same way with the same hash.
	cmd := res.Replay
	for _, who := range []string{"the table's replay", "the banner's replay"} {
		s := pasted(t, root, who, cmd)
		if s.TraceHash != res.TraceHash {
			t.Fatalf("%s ran differently: trace-hash %q, want %q", who, s.TraceHash, res.TraceHash)
		}
		if !slices.Contains(s.Violations, ms[0].Property) {
			t.Errorf("%s did not fail %s: %+v", who, ms[0].Property, s)
		}
		cmd = s.Replay
	}
}

// pasted runs a printed command in a shell, as a developer would, and
// returns its summary line.
func pasted(t *testing.T, root, who, command string) Summary {
	t.Helper()
	t.Logf("%s: %s", who, command)
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, OverlayEnv+"=") })
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("%s passed:\n%s", who, tail(string(out), 40))
	}
	s, ok := ParseSummary(string(out))
	if !ok {
		t.Fatalf("%s printed no summary line:\n%s", who, tail(string(out), 40))
	}
	if got := lastValue(string(out), "trace-hash: "); got != s.TraceHash {
		t.Errorf("%s: last line says trace-hash %q, its summary %q", who, got, s.TraceHash)
	}
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

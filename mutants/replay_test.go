package mutants

import (
	"context"
	"flag"
	"os/exec"
	"path/filepath"
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
	cmd := exec.Command("sh", "-c", res.Replay)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the pasted replay command passed:\n%s", out)
	}
	if got := lastValue(string(out), "trace-hash: "); got != res.TraceHash {
		t.Fatalf("the replay ran differently: trace-hash %q, want %q\n%s", got, res.TraceHash, tail(string(out), 40))
	}
	if !strings.Contains(string(out), "violated: "+ms[0].Property+":") {
		t.Errorf("the replay did not fail %s:\n%s", ms[0].Property, tail(string(out), 40))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package mutants

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/relaysim/relaysim/internal/proc"
)

// The test binary is its own fake relaysim: run again with envFakeRun
// set, it plays the child named there instead of running the tests.
const envFakeRun = "MUTANTS_TEST_FAKE_RUN"

func TestMain(m *testing.M) {
	if kind := os.Getenv(envFakeRun); kind != "" {
		os.Exit(fakeRun(kind))
	}
	os.Exit(m.Run())
}

// fakeRun prints a failed run's banner and summary line, and ends as kind
// says: with its typed result written, without one, with garbage in its
// place, or hung.
func fakeRun(kind string) int {
	line := `{"summary":"violation","exit":1,"command":"run","violations":["no-loss"],"trace_hash":"ab","evidence":["violated: no-loss: room r1 seq 3: lost"]}`
	fmt.Println("violated: no-loss: room r1 seq 3: lost")
	fmt.Println(line)
	fmt.Println("trace-hash: ab")
	switch kind {
	case "result":
		if err := os.WriteFile(os.Getenv(proc.EnvResult), []byte(line), 0o644); err != nil {
			return 3
		}
	case "garbage":
		_ = os.WriteFile(os.Getenv(proc.EnvResult), []byte("violated: no-loss\n"), 0o644)
	case "hang":
		time.Sleep(time.Minute)
	}
	return 1
}

// The catalog judges a relaysim run by the result it wrote, never by its
// printed text: the same text is a catch with the result, a crash
// without it, with garbage in its place, or when the run hung.
func TestAttemptReadsTheResultFile(t *testing.T) {
	for _, tc := range []struct{ kind, want, evidence string }{
		{"result", Caught, "violated: no-loss: room r1 seq 3: lost"},
		{"text-only", Crash, "exit 1 without a result: violated: no-loss: room r1 seq 3: lost"},
		{"garbage", Crash, "exit 1 without a result: violated: no-loss: room r1 seq 3: lost"},
		{"hang", Crash, "hung: killed at the run's time limit"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Setenv(envFakeRun, tc.kind)
			r := &run{o: Options{RunTimeout: 500 * time.Millisecond}, m: &Mutant{Name: "fake", Property: "no-loss"},
				deadline: time.Now().Add(time.Minute)}
			start := time.Now()
			oc, cut := r.attempt(context.Background(), t.TempDir(), os.Args[0])
			if cut {
				t.Fatal("cut by the budget: want the run's own limit")
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			v := Judge("no-loss", oc)
			if v.Kind != tc.want || v.Evidence != tc.evidence {
				t.Errorf("got %s (%q), want %s (%q)", v, v.Evidence, tc.want, tc.evidence)
			}
			if tc.kind == "result" && (oc.Summary == nil || oc.Summary.TraceHash != "ab") {
				t.Errorf("summary %+v", oc.Summary)
			}
		})
	}
}

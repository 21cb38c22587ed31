// Package golden holds the expected outputs of fixed runs: a short report
// of the seeds' experiments and the trace hashes of a fixed set of seeds in
// every mode and cost model. `go test ./golden` compares them byte for
// byte; `go test ./golden -update` rewrites them. Review the diff of a
// rewrite like code: it is what a change does to behaviour.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaysim/relaysim/experiments"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

var update = flag.Bool("update", false, "rewrite the golden files (then review the diff)")

func compare(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s: review the diff before committing", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what this run produced; if the change is intended, run go test ./golden -update and review the diff.\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// Short returns the golden files' experiment sizes: 3 s of load, 5 s of
// drain, 5 messages per Scenario 1/2 run, Scenario 2 at 200 users.
func short(t *testing.T) experiments.Options {
	o := experiments.Short()
	o.Load, o.Drain, o.T = 3*time.Second, 5*time.Second, t
	return o
}

func TestReportShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	o := short(t)
	rep, err := experiments.Run(o, "axis-a", 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := experiments.Run(o, "axis-b", 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep.AxisB = b.AxisB
	s1, s2 := experiments.Scenario1(o, 5)
	rep.Scenario1 = []experiments.Fanout{s1, s2}
	rep.Scenario2 = experiments.Scenario2(o, []int{200}, 5)
	var md, js bytes.Buffer
	rep.Markdown(&md)
	if err := rep.JSONRows(&js); err != nil {
		t.Fatal(err)
	}
	compare(t, "report-short.md", md.Bytes())
	compare(t, "report-short.jsonl", js.Bytes())
}

// TestTraceHashes pins the trace hash of the runner's default run for a
// fixed set of seeds, in every mode and both cost models, and of a rolling
// upgrade v1 to v3 in stream mode (a protocol change shows here).
func TestTraceHashes(t *testing.T) {
	var out bytes.Buffer
	for _, cost := range sim.CostModels() {
		for _, mode := range system.Modes {
			for _, seed := range []sim.Seed{0x1, 0x2a, 0x5eed} {
				cfg := sim.DefaultConfig()
				cfg.Seed, cfg.Mode = seed, mode
				cpu, err := sim.CostByName(cost)
				if err != nil {
					t.Fatal(err)
				}
				cfg.CPU = cpu
				res := sim.Run(t, cfg)
				verdict := "ok"
				if res.Failed() {
					verdict = fmt.Sprintf("FAILED (%d violations, err=%v)", len(res.Violations), res.Err)
				}
				fmt.Fprintf(&out, "cost=%s mode=%s seed=%s trace-hash=%s %s\n", cost, mode, seed, res.TraceHash, verdict)
			}
		}
	}
	for _, seed := range []sim.Seed{0x1, 0x2a} {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Mode, cfg.Upgrade = seed, system.ModeStream, &sim.Upgrade{From: 1, To: 3}
		res := sim.Run(t, cfg)
		verdict := "ok"
		if res.Failed() {
			verdict = fmt.Sprintf("FAILED (%d violations, err=%v)", len(res.Violations), res.Err)
		}
		fmt.Fprintf(&out, "cost=swarm mode=stream upgrade=v1:v3 seed=%s trace-hash=%s %s\n", seed, res.TraceHash, verdict)
	}
	compare(t, "trace-hashes.txt", out.Bytes())
}

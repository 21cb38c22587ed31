package scenarios

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

var (
	seedFlag  = flag.String("seed", "", "replay one seed of TestRelaySeeds (hex 0x2a or decimal)")
	seedsFlag = flag.Int("seeds", 12, "how many seeds TestRelaySeeds sweeps per mode (from -seed-base); 12 keeps go test ./... within minutes on 2 cores (.ci/run adds seeds 13-25, the sweeps go further)")
	seedBase  = flag.Uint64("seed-base", 1, "first seed of the TestRelaySeeds sweep")
	traceFlag = flag.String("simtrace", "", "write the whole simulation trace to this file (go test reserves -trace for its execution tracer)")
)

// TestRelaySeeds runs the runner's default simulation (workload, faults,
// liveness phase, every property) on a sample of seeds in every mode, and
// each seed's calm variant in every mode for mode equivalence, and each
// seed's churn-only variant in one mode: the runs of `relaysim sweep`, all
// in the plain alphabet (the sweep runs about half its seeds with
// -alphabet=wide: sim.SweepAlphabet). With -seed it replays that one seed, and
// -simtrace writes its trace. A failure prints the banner with the replay
// command.
func TestRelaySeeds(t *testing.T) {
	seeds, err := seedList()
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() && *seedFlag == "" {
		seeds = seeds[:min(len(seeds), 4)]
	}
	for _, mode := range system.Modes {
		t.Run(string(mode), func(t *testing.T) {
			for _, seed := range seeds {
				t.Run(seed.String(), func(t *testing.T) {
					t.Parallel()
					runSeed(t, seed, mode)
				})
			}
		})
	}
	t.Run("equivalence", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(seed.String(), func(t *testing.T) {
				t.Parallel()
				runEquivalence(t, seed)
			})
		}
	})
	t.Run("churn-only", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(seed.String(), func(t *testing.T) {
				t.Parallel()
				runChurnOnly(t, seed)
			})
		}
	})
}

// runChurnOnly runs the seed's churn-only variant (its own membership and
// connection churn, no fault; timely delivery judged with no fault excuse)
// in one mode, the seed's turn of the three (seed mod 3), so that every
// mode is covered and go test ./... grows by one cheap run per seed, not
// three; `relaysim sweep` runs it in every swept mode.
func runChurnOnly(t *testing.T, seed sim.Seed) {
	mode := system.Modes[uint64(seed)%uint64(len(system.Modes))]
	cfg := sim.DefaultConfig().ChurnVariant(mode)
	cfg.Seed = seed
	res := sim.Run(t, cfg)
	if res.Failed() {
		recordViolations(res.Violations)
		replay := fmt.Sprintf("go tool%s relaysim replay -seed %s -mode %s -churn-only -trace trace.txt", overlayArg(), seed, mode)
		t.Fatalf("churn-only variant %s: %s\n%s", mode, model.Summarize(res.Violations), sim.Banner(sim.WholeTrace(t, res), replay, commit()))
	}
}

// runEquivalence is `relaysim equiv` for one seed: the calm variant in every
// mode, each judged on its own, then compared.
func runEquivalence(t *testing.T, seed sim.Seed) {
	cfg := sim.DefaultConfig()
	cfg.Seed = seed
	runs, vs := sim.Equivalence(t, cfg)
	var replays []string
	for _, r := range runs {
		replays = append(replays, fmt.Sprintf("go tool%s relaysim replay -seed %s -mode %s -calm -trace trace.txt", overlayArg(), seed, r.Config.Mode))
		if r.Failed() {
			recordViolations(r.Violations)
			t.Errorf("calm variant %s: %s\n%s", r.Config.Mode, model.Summarize(r.Violations), sim.Banner(r, replays[len(replays)-1], "this commit"))
		}
	}
	if len(vs) > 0 {
		recordViolations(vs)
		var b strings.Builder
		for i, v := range vs {
			if i < 10 {
				fmt.Fprintf(&b, "violated: %s\n", v)
			}
		}
		t.Errorf("mode equivalence FAILED for seed %s: %s\n%sreplay:  %s\nreplay:  %s\nor:      go test%s ./scenarios -run 'TestRelaySeeds/equivalence/%s$' -seed=%s",
			seed, model.Summarize(vs), b.String(), replays[0], replays[1], overlayArg(), seed, seed)
	}
}

func seedList() ([]sim.Seed, error) {
	if *seedFlag != "" {
		s, err := sim.ParseSeed(*seedFlag)
		return []sim.Seed{s}, err
	}
	out := make([]sim.Seed, *seedsFlag)
	for i := range out {
		out[i] = sim.Seed(*seedBase + uint64(i))
	}
	return out, nil
}

func runSeed(t *testing.T, seed sim.Seed, mode system.Mode) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Mode = seed, mode
	cfg.KeepTrace = *traceFlag != ""
	res := sim.Run(t, cfg)
	if *traceFlag != "" && res.Trace != nil {
		if err := os.WriteFile(*traceFlag, []byte(res.Trace.Text()), 0o644); err != nil {
			t.Errorf("write trace: %v", err)
		}
	}
	if *seedFlag != "" {
		t.Logf("seed %s mode %s trace-hash: %s", seed, mode, res.TraceHash)
	}
	if res.Failed() {
		recordViolations(res.Violations)
		replay := fmt.Sprintf("go test%s ./scenarios -run 'TestRelaySeeds/%s/%s$' -seed=%s -simtrace=trace.txt", overlayArg(), mode, seed, seed)
		t.Fatalf("%s\n%s", model.Summarize(res.Violations), sim.Banner(sim.WholeTrace(t, res), replay, commit()))
	}
}

// commit names the commit under test: the binary's VCS stamp when it has
// one, which a test binary never does, else git's HEAD (with "+dirty" when
// the work tree has changes), else "unknown".
var commit = sync.OnceValue(func() string {
	if c := sim.BuildCommit(); c != "unknown" {
		return c
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
})

// overlayArg is " -overlay=FILE" when the suite runs against a mutant (the
// mutants harness sets RELAYSIM_OVERLAY), so a pasted replay command builds
// the same broken variant.
func overlayArg() string {
	if o := os.Getenv("RELAYSIM_OVERLAY"); o != "" {
		return " -overlay=" + o
	}
	return ""
}

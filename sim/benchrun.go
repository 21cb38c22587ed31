package sim

import (
	"testing"
)

// BenchRun runs one simulation from a benchmark (this package's and
// sim/floorbench's). synctest bubbles need a
// *testing.T, which a benchmark does not have, so the run is wrapped in a
// one-test testing.RunTests (its own T and bubble; the match function accepts
// it whatever -test.run says). Run(nil, ...) is not used here: its in-process
// testing.M would re-apply this binary's flags (-run '^$' would skip the
// run, and -cpuprofile would truncate the benchmark's own profile).
func BenchRun(b *testing.B, cfg Config) *Result {
	b.Helper()
	var res *Result
	tests := []testing.InternalTest{{Name: "BenchRun", F: func(t *testing.T) {
		if res == nil { // -count=N would run the test N times: once is enough
			res = Run(t, cfg)
		}
	}}}
	always := func(string, string) (bool, error) { return true, nil }
	if !testing.RunTests(always, tests) || res == nil {
		b.Fatalf("seed %s mode %s: the simulation test failed", cfg.Seed, cfg.Mode)
	}
	if res.Failed() {
		b.Fatalf("seed %s mode %s: err=%v bubble=%v violations=%d", cfg.Seed, cfg.Mode, res.Err, res.BubbleErr, len(res.Violations))
	}
	return res
}

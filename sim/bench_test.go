package sim

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Simulation-speed benchmarks (DESIGN.md §8). They never run under a plain
// `go test ./...`; run them with, e.g.
//
//	go test -run '^$' -bench . -benchtime=1x ./sim/
//
// Custom metrics: virtual-s/wall-s (speed against real time), ops/s
// (released gated operations, Result.Steps, per wall second) and
// wall-ms/seed (one complete run). BenchmarkAxisB50 also reports peak heap.

// speed accumulates runs and reports the custom metrics.
type speed struct {
	virtual, wall time.Duration
	steps, runs   int
	hashes        map[string]bool
}

// add records one run. Every iteration runs the same seed, so every trace
// hash should be the same; a divergence is logged and counted (the
// "trace-hashes" metric, 1 when deterministic) rather than failing the
// benchmark, so that the speed figures are still reported.
func (s *speed) add(b *testing.B, r *Result) {
	if s.hashes == nil {
		s.hashes = map[string]bool{}
	}
	if len(s.hashes) > 0 && !s.hashes[r.TraceHash] {
		b.Logf("NONDETERMINISM: seed %s mode %s: iteration %d gave trace hash %s, earlier ones %v", r.Config.Seed, r.Config.Mode, s.runs+1, r.TraceHash, s.hashes)
	}
	s.hashes[r.TraceHash] = true
	s.virtual += r.Virtual
	s.wall += r.Wall
	s.steps += r.Steps
	s.runs++
}

func (s *speed) report(b *testing.B) {
	if s.runs == 0 || s.wall <= 0 {
		return
	}
	b.ReportMetric(s.virtual.Seconds()/s.wall.Seconds(), "virtual-s/wall-s")
	b.ReportMetric(float64(s.steps)/s.wall.Seconds(), "ops/s")
	b.ReportMetric(float64(s.wall.Milliseconds())/float64(s.runs), "wall-ms/seed")
	b.ReportMetric(float64(s.steps)/float64(s.runs), "steps/seed")
	b.ReportMetric(float64(len(s.hashes)), "trace-hashes")
}

// BenchmarkDefaultRun is `relaysim run -seed 0x2a` in each mode.
func BenchmarkDefaultRun(b *testing.B) {
	for _, mode := range []system.Mode{system.ModeSingle, system.ModeBulk} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Seed, cfg.Mode = 0x2a, mode
			var s speed
			for b.Loop() {
				s.add(b, BenchRun(b, cfg))
			}
			s.report(b)
		})
	}
}

// axisB50 is the heaviest Axis B condition of the seeds
// (single-vs-bulk-relay-remeasured): 3 nodes, one room of 150 users, 50
// messages/s for 120 s then a 60 s drain, pool core 30 / max 200 / queue
// 1000 / keep-alive 60 s, no faults and no churn.
func axisB50(mode system.Mode) Config {
	cfg := DefaultConfig()
	cfg.Seed, cfg.Mode, cfg.Nodes = 0x2a, mode, 3
	cfg.Users, cfg.Rooms, cfg.RoomsPerUser, cfg.Churn = 150, 1, 1, 0
	cfg.Rate, cfg.Duration, cfg.Drain = 50, 120*time.Second, 60*time.Second
	cfg.Bounds = NoFaults()
	cfg.Executor = system.ExecutorConfig{Core: 30, Max: 200, Queue: 1000, KeepAlive: 60 * time.Second}
	return cfg
}

// BenchmarkAxisB50 runs the heaviest Axis B condition in each mode. Use
// -benchtime=1x: one iteration takes tens of seconds or more. Besides the
// speed metrics it reports the peak heap in use during the run (sampled
// every 10 ms of wall time, above the heap in use before it) in total and
// per simulated user.
func BenchmarkAxisB50(b *testing.B) {
	for _, mode := range []system.Mode{system.ModeSingle, system.ModeBulk} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			cfg := axisB50(mode)
			b.ReportAllocs()
			var s speed
			var peak uint64
			for b.Loop() {
				base, stop := heapSampler()
				s.add(b, BenchRun(b, cfg))
				if p := stop(); p > base {
					peak = max(peak, p-base)
				}
			}
			s.report(b)
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(peak)/float64(cfg.Users), "heap-B/user")
		})
	}
}

// heapSampler records HeapInuse (after a GC, as the base) and then samples
// it every 10 ms until stop is called; stop returns the maximum seen.
func heapSampler() (base uint64, stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base = ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return base, func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkChecks times the oracle on one default run's history per mode:
// every checker issue 18 added (content-integrity, bad-names-refused,
// bounded-backlog, relay-mode, stream-backoff) and the whole of
// model.Check, for BENCHMARKS.md's cost of the new checks.
func BenchmarkChecks(b *testing.B) {
	for _, mode := range []system.Mode{system.ModeBulk, system.ModeStream} {
		b.Run(string(mode), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Seed, cfg.Mode = 0x2a, mode
			h := BenchRun(b, cfg).History
			b.ReportMetric(float64(h.Deliveries.Len()), "deliveries")
			for _, c := range []struct {
				name  string
				check func(*model.History) []model.Violation
			}{
				{"content-integrity", model.CheckContent},
				{"bad-names-refused", model.CheckBadNamesRefused},
				{"bounded-backlog", model.CheckBacklog},
				{"relay-mode", model.CheckRelayMode},
				{"stream-backoff", model.CheckStreamBackoff},
				{"timely", model.CheckTimely},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						if vs := c.check(h); len(vs) > 0 {
							b.Fatalf("%v", vs[0])
						}
					}
				})
			}
			b.Run("all", func(b *testing.B) {
				for b.Loop() {
					model.Check(h)
				}
			})
		})
	}
}

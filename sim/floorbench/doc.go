// Package floorbench measures the floor of a simulated run: the real
// gRPC and Redis work a run does, replayed or pushed through the same
// stacks with no simulation (no bubble, scheduler, gates, trace or
// checks). The simulation cannot be faster than its floor; the
// benchmarks report how far above it a run is (BENCHMARKS.md).
//
// It holds benchmarks only: they never run under a plain `go test`.
//
//	go test -run '^$' -bench . -benchtime=1x ./sim/floorbench/
package floorbench

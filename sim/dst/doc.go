// Package dst is relaysim's deterministic simulation kernel, relay-agnostic:
// a testing/synctest bubble (virtual time), a seeded scheduler that parks
// every gated operation and releases one at a time ("quiesce and pick"),
// the strategies that pick (random, PCT, exhaustive), seeds and their
// sub-seeds, the run's trace, and a contended-resource model whose costs
// the harness supplies. The in-memory network is its sub-package memnet.
//
// It imports the standard library only (arch_test.go at the module root
// checks it): it knows nothing of relays, gRPC or Redis. The harness
// (package sim) names operations, decides what they cost and what a fault
// is, and hands the kernel plain values: a GateSpec per operation, a
// latency function, a cost function.
package dst

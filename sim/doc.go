// Package sim is relaysim's deterministic simulation kernel: it runs a whole
// relay cluster (system.Node) in one testing/synctest bubble — gRPC over
// bufconn, go-redis against miniredis — under a virtual clock and a seeded
// scheduler, injects faults, and records a trace and a model.History.
//
// Determinism comes from "quiesce and pick": every operation that crosses a
// component boundary parks at a gate; the driver waits until the bubble is
// quiescent, sorts the parked operations by a stable key and releases one,
// chosen by the run's strategy. Latencies are applied before an operation
// parks and derive from hash(seed, key), never from arrival order.
//
// sim imports system (the code under test) and model (the history types it
// records into); system never imports sim.
package sim

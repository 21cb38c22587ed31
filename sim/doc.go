// Package sim is relaysim's harness: it wires the relay (system.Node) into
// the kernel (sim/dst) and runs a whole cluster in one testing/synctest
// bubble — gRPC over the in-memory network (sim/dst/memnet), go-redis
// against miniredis — with simulated clients, a generated workload and
// injected faults, and records what happened as a model.History for the
// oracle (model) to judge.
//
// Determinism comes from the kernel's "quiesce and pick": every operation
// that crosses a component boundary parks at a gate (the hooks here name
// it: a dst.GateSpec); the driver waits until the bubble is quiescent and
// releases one parked operation, chosen by the run's strategy. Latencies
// are applied before an operation parks and derive from hash(seed, key),
// never from arrival order.
//
// sim imports system (the code under test), model (the history types it
// records into) and the kernel; system never imports sim, and the kernel
// imports none of them.
package sim

// Package system is the chat relay under test: production code that runs for
// real (TCP, a real Redis) and, unchanged, inside relaysim's simulation.
//
// A Node serves the client-facing Chat service and the node-to-node Relay
// service over gRPC, keeps user routing, membership, room sequences and room
// logs in Redis, and runs every delivery and relay task on an Executor with
// the seeds' semantics (core, queue, max, then caller-runs).
//
// system must never import relaysim's sim/, model/ or test packages. The
// simulation reaches it only through what this package owns: the Deps
// injection points (listener, dialer, Redis options, gRPC options) and the
// Hooks interface.
//
// Written to be simulated: no sync.Mutex is held across a call that can block
// on another goroutine (gRPC, Redis, a channel send, a stream send) — a
// 1-slot channel is the lock there; no map iteration order reaches
// behaviour (keys are sorted); no global math/rand; work that outlives a gRPC
// handler runs under the node's context.
package system

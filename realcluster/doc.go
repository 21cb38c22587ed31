// Package realcluster runs the relay for real and judges it with the
// simulation's oracle: redis-server and N relayd processes on loopback
// ports, real gRPC clients over TCP running a seeded workload, a seeded
// nemesis (SIGKILL, SIGSTOP/SIGCONT, SIGTERM, redis-server restarts, and
// delays, drops and cuts of single directions between nodes through a TCP
// proxy), then a liveness phase and the model/ checks that read only what
// the clients saw and the room logs.
//
// The history is recorded in model's types with wall-clock invocation and
// completion times (time since the run began, monotonic) and written in the
// JSON-lines format of the simulator's -history (ReadHistory reads both).
//
// Unlike the simulation nothing here is deterministic: the seed fixes the
// workload's and the nemesis' plans, not the interleaving. Every process
// the runner starts is stopped by PID when Run returns, also when its
// context is cancelled (SIGINT, SIGTERM) or a step fails; only loopback
// addresses are used; every loop is bounded in count and time.
package realcluster

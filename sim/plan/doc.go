// Package plan holds the data of a run's plan: what simulated users do
// (Action, ActionKind), the faults a seed may draw and drew (FaultBounds,
// FaultMix) and its timed faults (Fault, with a forge fault's Forgery and
// a steal fault's Steal), with their trace text (the String methods, which
// the trace hashes) and their plan text (FormatAction, ParseAction,
// FormatFault, ParseFault, FormatMix, ParseMix: one line each that parses
// back to the same value).
//
// plan is data, not machinery: it imports model (for the fault kinds) and
// the standard library, never the harness (sim, the kernel), the relay
// (system) or gRPC. The harness (sim) performs a plan; sim/planalias.go
// names these types in sim, so that sim.Action is plan.Action.
package plan

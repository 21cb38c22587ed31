// Package mutants is the bug catalog of DESIGN §7 and its harness.
//
// Each file of catalog/ is one realistic relay bug as data: a txtar archive
// whose header names the mutant, tells its one-line story, the file of
// system/ it changes, the property that must catch it and the suite that
// runs, and whose sections hold the exact snippet to find (once) and its
// replacement. The harness applies a mutant with `go build -overlay`, so
// the production code stays clean, runs the named suite until its first
// failure or until the budget runs out, and judges the outcome: a mutant
// is caught only when the property it names fails. A build error, a crash,
// a hang or another property's failure is reported as what it is, never as
// caught, because a suite that fails for the wrong reason has not shown it
// can see the bug.
//
// `relaysim mutants` (cmd/relaysim) is the command-line face of Run.
package mutants

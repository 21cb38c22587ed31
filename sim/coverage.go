package sim

// Coverage counts how often a run's wider world showed up: what the
// generator drew that the suite did not use to, as the run met it.
type Coverage struct {
	// Steals are sends made with another user's client message id (steal
	// faults, steal.go); StealsAsMember of them were accepted (sequenced
	// as the stealer's own message) and StealsRefused refused
	// FailedPrecondition (the stealer was no member).
	Steals, StealsAsMember, StealsRefused int
}

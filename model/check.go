package model

// Check runs every single-history checker in a fixed order and concatenates
// their violations. Mode equivalence needs two runs: see CheckModeEquivalence.
func Check(h *History) []Violation {
	checkers := []func(*History) []Violation{
		CheckNoLoss,
		CheckOrdering,
		CheckNoStray,
		CheckExactlyOnce,
		CheckStreamLeaks,
		CheckGoroutineLeaks,
		CheckWorkers,
	}
	var out []Violation
	for _, c := range checkers {
		out = append(out, c(h)...)
	}
	return out
}

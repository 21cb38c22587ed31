package model

// Check runs every single-history checker in a fixed order and concatenates
// their violations. Mode equivalence needs two runs: see CheckModeEquivalence.
// A history with Redis rewinds is judged as they leave it (rewind.go).
func Check(h *History) []Violation { return withRewinds(h, check) }

func check(h *History) []Violation {
	checkers := []func(*History) []Violation{
		CheckNoLoss,
		CheckWindows,
		CheckOrdering,
		CheckNoStray,
		CheckExactlyOnce,
		CheckStreamLeaks,
		CheckGoroutineLeaks,
		CheckWorkers,
		CheckTimely,
		CheckNoPanics,
		CheckForgedRejected,
		CheckContent,
		CheckBadNamesRefused,
		CheckBadNodeIDs,
		CheckBacklog,
		CheckRelayMode,
		CheckStreamBackoff,
		CheckReplayMemory,
		CheckRegistry,
		CheckIsolation,
		CheckNoUnfairCut,
	}
	var out []Violation
	for _, c := range checkers {
		out = append(out, c(h)...)
	}
	return out
}

// CheckPrefix runs the checkers that hold at every quiescent point of a
// run, not only after the drain: nothing stray, per-room order, no acked
// send lost, windows consistent with real time, streams matching sessions,
// workers and goroutines within bounds at every sample, no panics, forged
// calls and malformed names rejected, content as sent. Calls
// still in flight must be in h as events with Err "Pending" (their outcome
// is unknown). Dispatch task counts, exactly-once and timely delivery are
// judged after the drain only: a dispatch's tasks may still be queued.
func CheckPrefix(h *History) []Violation { return withRewinds(h, checkPrefix) }

func checkPrefix(h *History) []Violation {
	var out []Violation
	for _, c := range []func(*History) []Violation{
		CheckNoLoss, CheckWindows, CheckOrdering, CheckNoStray, CheckNoPanics, CheckForgedRejected, CheckContent, CheckBadNamesRefused, CheckBadNodeIDs, CheckBacklog, CheckRelayMode, CheckStreamBackoff, CheckReplayMemory, CheckRegistry,
	} {
		out = append(out, c(h)...)
	}
	for _, s := range h.Samples {
		out = append(out, samplePool(s, h.GoroutineBound)...)
	}
	return append(out, CheckStreamLeaks(&History{Samples: h.Samples})...)
}

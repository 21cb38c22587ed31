package sim

// Coverage counts how often a run's world showed the conditions the
// widened generator aims at (issue 18), so that a sweep can say how often
// each showed up. Each field is filled during the run; Result.Coverage
// holds it.
type Coverage struct {
	// MixedConfigs is 1 when the run's nodes did not all run the same
	// limits (MaxPayload, MaxRecipients) and protocol version at the
	// start, as during a config rollout, else 0.
	MixedConfigs int
	// OverlappingIncarnations counts restarts and upgrades whose new
	// incarnation started before the old one had finished stopping.
	OverlappingIncarnations int
}

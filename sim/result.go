package sim

import (
	"time"

	"github.com/relaysim/relaysim/model"
)

// Result is what a run produced.
type Result struct {
	Config   Config
	Mix      FaultMix
	Cost     CostModel
	Channels int // gRPC connections per peer (drawn or set)
	// StreamBacklog is the nodes' link backlog bound (drawn or set; 0:
	// the default).
	StreamBacklog int
	// Limits are the nodes' drawn limits and protocols (nil: not a mixed
	// cluster; DrawLimits).
	Limits []NodeLimits
	Faults []Fault
	// Actions is the workload the run played (generated, or Config.Actions).
	Actions    []Action
	History    *model.History
	Violations []model.Violation
	TraceHash  string
	Trace      *Trace
	Stats      Stats
	// Coverage says how often the run showed what the coverage line
	// reports (coverage.go).
	Coverage Coverage
	// Probes counts the relay's code probes the run hit, by name (only
	// those hit; system.Probes lists them all): harness-side coverage,
	// not evidence — no verdict reads it.
	Probes  map[string]int
	Virtual time.Duration
	Wall    time.Duration
	Steps   int
	Delays  int
	Peaks   []int
	// Live and FromLog count the deliveries pushed live and those replayed
	// or gap-filled from the room log.
	Live, FromLog int
	// Busy is the work booked per resource (CPU model only).
	Busy []ResourceBusy
	// MaxWait is the longest any op waited for a core (CPU model only);
	// the live bound grew by ContendedLiveBound of it.
	MaxWait time.Duration
	// BubbleErr is set when the bubble itself failed (a deadlock, or
	// goroutines left behind).
	BubbleErr error
	Err       error
	notes     []string // for the banner (see WholeTrace)
}

// Failed reports whether the run violated a property or did not complete.
func (r *Result) Failed() bool {
	return len(r.Violations) > 0 || r.BubbleErr != nil || r.Err != nil
}

// Counts are the run's headline numbers (model.CountsOf): what its printed
// summary and its timeline's header show.
func (r *Result) Counts() model.Counts {
	return model.CountsOf(r.History, len(usersOf(r.Actions)), r.Stats.FaultsInjected)
}

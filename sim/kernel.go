package sim

import "github.com/relaysim/relaysim/sim/dst"

// The kernel's names the harness's own API speaks (Config, Result,
// ClusterConfig hold them): aliases, so that a caller of sim needs no
// second import for them. New code that wants only the kernel (a seed, a
// trace, the scheduler) imports sim/dst and none of the relay.
type (
	Seed         = dst.Seed
	Op           = dst.Op
	Trace        = dst.Trace
	Strategy     = dst.Strategy
	Chooser      = dst.Chooser
	Random       = dst.Random
	Exhaustive   = dst.Exhaustive
	ResourceBusy = dst.ResourceBusy
)

var (
	ParseSeed  = dst.ParseSeed
	NewTrace   = dst.NewTrace
	Bubble     = dst.Bubble
	FormatTime = dst.FormatTime
)

// The plan's data types, named in sim: they live in sim/plan, which
// holds the data of a run's plan (and imports no harness); these aliases
// let sim and its callers keep spelling them sim.Action, sim.Fault, ...

package sim

import "github.com/relaysim/relaysim/sim/plan"

// The plan's types (sim/plan).
type (
	Action      = plan.Action
	ActionKind  = plan.ActionKind
	Fault       = plan.Fault
	FaultBounds = plan.FaultBounds
	FaultMix    = plan.FaultMix
	Forgery     = plan.Forgery
	Steal       = plan.Steal
)

// Client actions (plan.ActionKind).
const (
	ActCreate           = plan.ActCreate
	ActJoin             = plan.ActJoin
	ActLeave            = plan.ActLeave
	ActConnect          = plan.ActConnect
	ActDisconnect       = plan.ActDisconnect
	ActVanish           = plan.ActVanish
	ActSend             = plan.ActSend
	ActSlow             = plan.ActSlow
	ActStall            = plan.ActStall
	ActForgeSend        = plan.ActForgeSend
	ActForgeJoin        = plan.ActForgeJoin
	ActForgeLeave       = plan.ActForgeLeave
	ActForgeCreate      = plan.ActForgeCreate
	ActForgeConnect     = plan.ActForgeConnect
	ActForgeRelay       = plan.ActForgeRelay
	ActForgeRelayBulk   = plan.ActForgeRelayBulk
	ActForgeRelayStream = plan.ActForgeRelayStream
	ActSteal            = plan.ActSteal
	ActBadCreate        = plan.ActBadCreate
	ActBadJoin          = plan.ActBadJoin
	ActBadJoinAs        = plan.ActBadJoinAs
	ActBadSend          = plan.ActBadSend
	ActBadSendID        = plan.ActBadSendID
	ActBadConnect       = plan.ActBadConnect
)

// The network faults' draw names (plan.DrawDropRequest, ...) and what a
// latency spike adds (plan.RedisSpikeLatency).
const (
	drawDropRequest   = plan.DrawDropRequest
	drawDropResponse  = plan.DrawDropResponse
	drawDuplicate     = plan.DrawDuplicate
	drawDelay         = plan.DrawDelay
	drawRecvBreak     = plan.DrawRecvBreak
	redisSpikeLatency = plan.RedisSpikeLatency
)

// FormatAction is plan.FormatAction.
func FormatAction(a Action) string { return plan.FormatAction(a) }

// ParseAction is plan.ParseAction.
func ParseAction(line string) (Action, error) { return plan.ParseAction(line) }

// FormatFault is plan.FormatFault.
func FormatFault(f Fault) string { return plan.FormatFault(f) }

// ParseFault is plan.ParseFault.
func ParseFault(line string) (Fault, error) { return plan.ParseFault(line) }

// FormatMix is plan.FormatMix.
func FormatMix(m FaultMix) string { return plan.FormatMix(m) }

// ParseMix is plan.ParseMix.
func ParseMix(s string) (FaultMix, error) { return plan.ParseMix(s) }

// DefaultBounds is the runner's default (plan.DefaultBounds).
func DefaultBounds() FaultBounds { return plan.DefaultBounds() }

// NoFaults turns every fault off (plan.NoFaults).
func NoFaults() FaultBounds { return plan.NoFaults() }

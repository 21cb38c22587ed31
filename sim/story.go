package sim

import (
	"fmt"

	"github.com/relaysim/relaysim/system"
)

// StoryEvent is one thing the harness told the trace, as data: a node
// coming up, crashing or being upgraded, a relay call, a relay stream's
// step. Each kind's String is the trace line's text after the node, so
// the trace and a reader of the story (the scenario files' output:
// ClusterConfig.Story) cannot disagree, and no one re-parses trace text.
type StoryEvent struct {
	Line int    // the trace line that tells it
	Node string // the node it is about
	What fmt.Stringer
}

// NodeUp: a node incarnation started. Protocol is what the harness
// started it with; RelaysIn, the relay mode that version caps it to.
type NodeUp struct {
	Epoch    uint64
	Mode     system.Mode // the cluster's configured mode
	Protocol int
	RelaysIn system.Mode
	// Legacy is the legacy behaviours it runs with (none: the fixed
	// build).
	Legacy system.Legacy
}

func (e NodeUp) String() string {
	s := fmt.Sprintf("node.up epoch=%d mode=%s", e.Epoch, e.Mode)
	if e.Protocol != system.ProtocolLatest {
		s += fmt.Sprintf(" protocol=v%d (relays in %s)", e.Protocol, e.RelaysIn)
	}
	if e.Legacy != (system.Legacy{}) {
		s += " legacy=" + e.Legacy.String()
	}
	return s
}

// NodeLegacy: the node's next incarnations run with legacy behaviours To
// instead of From (Cluster.SetLegacy).
type NodeLegacy struct{ From, To system.Legacy }

func (e NodeLegacy) String() string {
	return fmt.Sprintf("node.legacy %s -> %s at its next start", e.From, e.To)
}

// NodeStartFailed: a start failed (on a Redis fault); the harness retries.
type NodeStartFailed struct {
	Try int
	Err error
}

func (e NodeStartFailed) String() string {
	return fmt.Sprintf("node.start failed (try %d): %v", e.Try, e.Err)
}

// NodeCrash: the node's incarnation of Epoch crashed.
type NodeCrash struct{ Epoch uint64 }

func (e NodeCrash) String() string { return fmt.Sprintf("node.crash epoch=%d", e.Epoch) }

// NodeUpgrade: the node restarts with protocol To, now (its incarnation
// of Epoch stops) or, when it is down, at its restart.
type NodeUpgrade struct {
	From, To  int
	Epoch     uint64
	AtRestart bool
	// Overlap: the new incarnation starts before the old one has stopped.
	Overlap bool
}

func (e NodeUpgrade) String() string {
	if e.AtRestart {
		return fmt.Sprintf("node.upgrade v%d -> v%d at its restart", e.From, e.To)
	}
	if e.Overlap {
		return fmt.Sprintf("node.upgrade v%d -> v%d epoch=%d overlapping", e.From, e.To, e.Epoch)
	}
	return fmt.Sprintf("node.upgrade v%d -> v%d epoch=%d", e.From, e.To, e.Epoch)
}

// RelayCall: a relay of Room#Seq to Target in Mode, as the node reported
// it (system.RelayEvent); Result is "ok", "queued" (a stream's write) or
// "err=<code>".
type RelayCall struct {
	Mode       system.Mode
	Target     string
	Room       string
	Seq        uint64
	Recipients int
	Attempt    int
	Result     string
}

func (e RelayCall) String() string {
	return fmt.Sprintf("relay.%s -> %s %s#%d recipients=%d attempt=%d %s", e.Mode, e.Target, e.Room, e.Seq, e.Recipients, e.Attempt, e.Result)
}

// Quiet reports whether the call is one a story leaves out unless asked
// for every relay: a first attempt that went through.
func (e RelayCall) Quiet() bool {
	return e.Attempt == 1 && (e.Result == "ok" || e.Result == "queued")
}

// StreamStep: a relay stream link's step (system.StreamEvent.What: open,
// ack, broken, fallback, drop, handover, ...); Result is " acked=N", "
// err=<code>" or "".
type StreamStep struct {
	What   string
	Target string
	Link   string
	Items  int
	Result string
}

func (e StreamStep) String() string {
	return fmt.Sprintf("stream.%s -> %s %s items=%d%s", e.What, e.Target, e.Link, e.Items, e.Result)
}

// Quiet reports whether the step is one a story leaves out unless asked
// for every relay: a stream opened or acknowledged.
func (e StreamStep) Quiet() bool { return e.What == "open" || e.What == "ack" }

// tell traces what happened to node and, when the cluster keeps its story,
// adds it there; it returns the trace line (0: the trace is frozen).
func (c *Cluster) tell(node string, what fmt.Stringer) int {
	line := c.Trace.Event(c.Now(), node, "%s", what)
	if line > 0 && c.cfg.Story {
		c.rec.story(StoryEvent{Line: line, Node: node, What: what})
	}
	return line
}

// Story returns the story so far (ClusterConfig.Story; nil without it).
func (c *Cluster) Story() []StoryEvent { return c.rec.storySoFar() }

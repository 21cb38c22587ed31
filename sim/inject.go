package sim

import (
	"strconv"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// injection is one fault as the harness injects it. inject counts it,
// traces it and records it, so that the run's count, the trace and the
// oracle's history never tell one fault three ways.
type injection struct {
	// node is whom the trace line is about ("chaos": the fault injector
	// itself); what is the line's text after "fault ".
	node, what string
	// record is what the history records (nil: nothing, or a record made
	// elsewhere: a crash's by Crash, a heal's by ending its partition).
	record *model.Fault
	// effect marks a command that a Redis outage failed: the outage was
	// counted once, when it began. (The calls a partition loses are
	// counted one by one, as they always were.)
	effect bool
}

// inject counts, traces and records in (see injection).
func (c *Cluster) inject(in injection) {
	if !in.effect {
		c.Stats.FaultsInjected++
	}
	c.Trace.Event(c.Now(), in.node, "fault %s", in.what)
	if in.record != nil {
		c.rec.fault(*in.record)
	}
}

// opFault is the record of a fault that hit one operation, now: a relay
// call or stream write (nodes: sender and target) or a Redis command
// (redis; nodes: its node), working for message m (zero: none).
//
// A delay is one of them: it holds one call or write, by at most 2 s,
// which the per-operation recovery (model.RecoveryOp: a relay's timeouts
// and retries) covers, so every delay is recorded as this instant
// per-operation fault, a relay call's and a stream write's alike.
func (c *Cluster) opFault(kind model.FaultKind, m system.Message, redis bool, nodes ...string) *model.Fault {
	now := c.Now()
	return &model.Fault{From: now, To: now, Kind: kind, Op: true, Nodes: nodes, Redis: redis, Msg: msgName(m)}
}

// linkFault is the record of an instant fault of the link from -> to that
// names no message (a stream broken, connections reset).
func (c *Cluster) linkFault(kind model.FaultKind, from, to string) *model.Fault {
	now := c.Now()
	return &model.Fault{From: now, To: now, Kind: kind, Nodes: []string{from, to}}
}

// msgName is how the history names a message: "room#seq" ("" for none).
func msgName(m system.Message) string {
	if m.Room == "" {
		return ""
	}
	return m.Room + "#" + strconv.FormatUint(m.Seq, 10)
}

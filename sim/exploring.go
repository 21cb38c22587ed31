package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// This file is what the harness tells the model checker (dst.Explorer):
// what each gated operation touches, which faults it can carry out there,
// and the crashes it may choose. None of it is computed outside
// exploration, so ordinary runs keep their traces and speed.
//
// Objects:
//   - node:<id>   the memory of a node's running incarnation. An op whose
//     code up to its next gate is not shown to touch only the narrower
//     objects below writes it (two such ops of one node never commute);
//     an op that is shown reads it, so it stays dependent with those, with
//     a fault carried out at any op of the node (the explorer adds a
//     write of node:<id> to a faulted choice) and with a crash.
//   - alive:<id>  whether the node is up: a crash writes it; the node's own
//     ops and every call or client request towards it read it.
//   - client:<u>  a simulated client's state and what it has seen.
//   - redis:<key> a Redis key, read or written by a command (a script's
//     declared keys, once checked to touch no other; a command not on the
//     allowlist touches everything: redisfootprint.go).
//   - redis-script:<sha> whether Redis has the script cached: EVAL writes
//     it, EVALSHA reads it (a NOSCRIPT miss parks one more op, the EVAL).
//
// The narrower objects inside a node (the fine footprints, finenode.go has
// the op-by-op argument): session:<id>/<u> (user u's sessions there: the
// lock, last seqs, outbox, pump), exec:<id> (the executor's queue, idle
// workers and counts), peers:<id> (the peers map and each peer's
// connections) and retries:<id> (the counter naming retried fan-outs).

// Exploring reports whether the cluster runs under the model checker.
func (c *Cluster) Exploring() bool { return c.cfg.Explorer != nil }

// tNode is the footprint of an op of node, plus extra accesses: it writes
// the node's memory (the coarse footprint).
func (c *Cluster) tNode(node string, extra ...dst.Access) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	return append([]dst.Access{dst.W("node:" + node), dst.R("alive:" + node)}, extra...)
}

// tPoint is the footprint of a system point of node (label: the
// operation label of the gate's context): the node's, and for a session's
// send, open, close or lock the client's too (what it does to the
// client's stream races with the client's own moves; the commutation
// check found a write, and a lock, not commuting with a reconnect). A
// session's pump, a live delivery's session lock, a task about to run and
// a worker done with its task have fine footprints (finenode.go).
func (c *Cluster) tPoint(node string, p system.Point, label string) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	switch p.Kind {
	case system.PointSessionSend, system.PointSessionOpen, system.PointSessionClose, system.PointSessionLock:
		// The key begins with the user (names hold no space).
		i := strings.Index(p.Key, " #")
		if i <= 0 {
			return nil
		}
		user := p.Key[:i]
		if t := c.fineSession(node, user, p.Kind, label); t != nil {
			return t
		}
		return c.tNode(node, dst.W("client:"+user))
	case system.PointTask:
		if t := c.fineTask(node, p.Key); t != nil {
			return t
		}
	case system.PointTaskDone:
		if t := c.fineTaskDone(node); t != nil {
			return t
		}
	}
	return c.tNode(node)
}

// tCall is the footprint of node's call towards target.
func (c *Cluster) tCall(node, target string) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	return c.tNode(node, dst.R("alive:"+target))
}

// tClient is the footprint of a client's op: its own state, and the
// liveness of every node (a request may go to any of them).
func (c *Cluster) tClient(user string) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	t := make([]dst.Access, 0, 1+len(c.nodes))
	t = append(t, dst.W("client:"+user))
	for _, sn := range c.nodes {
		t = append(t, dst.R("alive:"+sn.id))
	}
	return t
}

// offer returns the faults an op offers the explorer (nil outside
// exploration).
func (c *Cluster) offer(faults ...string) []string {
	if !c.Exploring() {
		return nil
	}
	return faults
}

// Explore fault names: each is its own budget class.
const (
	ExDrop  = "drop"  // a relay request (or stream write) is lost
	ExLose  = "lose"  // a relay response is lost: the callee acted, the caller gives up
	ExError = "error" // a Redis command fails
	ExDelay = "delay" // a relay request is held past the caller's timeout
	ExCrash = "crash" // a node crashes (a lazy op per node)
)

// BlindRedisFootprints plants a hole in the footprints for the tests of
// the checks that must find one: Redis commands then touch no key, so
// commands of two nodes on one room look independent.
var BlindRedisFootprints bool

// tRedis is the footprint of node's Redis commands (one, or a pipeline),
// made under ctx (its operation label, and a relay handler's recipients).
func (c *Cluster) tRedis(ctx context.Context, node string, cmds []redis.Cmder) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	var t []dst.Access
	if BlindRedisFootprints {
		return c.tNode(node)
	}
	for _, cmd := range cmds {
		rt, why := redisTouch(cmd)
		if rt == nil {
			c.unknownFootprint(why)
			return nil
		}
		t = append(t, rt...)
	}
	if f := c.fineRedis(ctx, node, cmds); f != nil {
		return append(f, t...)
	}
	return append(c.tNode(node), t...)
}

// unknownFootprint counts an op whose footprint could not be classified
// (it touches everything: redisfootprint.go), by reason.
func (c *Cluster) unknownFootprint(why string) {
	c.footprintMu.Lock()
	defer c.footprintMu.Unlock()
	if c.footprintUnknown == nil {
		c.footprintUnknown = map[string]int{}
	}
	c.footprintUnknown[why]++
}

// UnknownFootprints are the ops of this run whose footprint could not be
// classified and that were taken to touch everything, by reason.
func (c *Cluster) UnknownFootprints() map[string]int {
	c.footprintMu.Lock()
	defer c.footprintMu.Unlock()
	out := make(map[string]int, len(c.footprintUnknown))
	for k, v := range c.footprintUnknown {
		out[k] = v
	}
	return out
}

// ArmExplore starts the explorer's choices of this run (a story's
// concurrent steps begin) and parks a lazy crash op per node that is up:
// the explorer may fire one, within its crash budget.
func (c *Cluster) ArmExplore() {
	e := c.cfg.Explorer
	if e == nil {
		return
	}
	e.Arm(c.Sched)
	c.fine = c.fineFootprints()
	for i, sn := range c.nodes {
		if !sn.up {
			continue
		}
		go func() {
			if c.Sched.Gate(dst.GateSpec{Node: sn.id, Kind: "crash", ID: sn.id, Lazy: true, Class: ExCrash,
				Touch: []dst.Access{dst.W("node:" + sn.id), dst.W("alive:" + sn.id)}}) == "fire" {
				c.Inject(Fault{Kind: model.FaultCrash, Node: i})
			}
		}()
	}
}

// HorizonPending is the story's work still pending when the explored
// window closes: ops parked and not held (ready, or waiting for a delay
// or a pause) and clients with a call in flight or actions queued. The
// relay's own timers are HorizonTimers.
func (c *Cluster) HorizonPending() (ops, calls int) {
	ops = c.Sched.Pending()
	for _, cl := range c.userList() {
		cl.mu.Lock()
		if cl.pending != nil || len(cl.inbox) > 0 {
			calls++
		}
		cl.mu.Unlock()
	}
	return ops, calls
}

// HorizonTimers counts the relay's work waiting on its own timers when
// the explored window closes (exploretimers.go): relay retries backing
// off, and stream links backing off before a resend or open until their
// linger closes them for the ack.
func (c *Cluster) HorizonTimers() int { return c.timers.pending() }

// DisarmExplore ends the choices at the story's horizon. A crash the
// explorer fires there runs to its end before DisarmExplore returns: the
// liveness phase that follows restarts crashed nodes, and must not start
// before the crash has (it would find the node up, and clients
// reconnecting to it would meet the crash).
func (c *Cluster) DisarmExplore() {
	if e := c.cfg.Explorer; e != nil && e.Disarm(c.Sched) {
		c.Sched.RunFor(0)
	}
}

// CrashStep crashes node i as one of a story's concurrent steps: a chaos
// op the explorer orders with the others (it touches the node and its
// liveness).
func (c *Cluster) CrashStep(i int) {
	id := c.nodes[i].id
	go func() {
		c.Sched.Gate(dst.GateSpec{Node: "chaos", Kind: KindChaos, ID: "crash " + id,
			Touch: []dst.Access{dst.W("node:" + id), dst.W("alive:" + id)}})
		if c.Trace.Frozen() {
			return
		}
		c.Inject(Fault{Kind: model.FaultCrash, Node: i})
	}()
}

// exploreDelay is how long a "delay" choice holds a relay request: past
// the caller's relay timeout, so the caller gives up while the callee
// still acts (the ambiguous outcome).
func (c *Cluster) exploreDelay() time.Duration {
	if !c.Exploring() {
		return 0
	}
	return c.relayTimeout + time.Millisecond
}

// exploreFault records a fault the explorer chose at an op, as the
// injector records a drawn one.
func (c *Cluster) exploreFault(kind model.FaultKind, node, what string, m system.Message, redis bool, targets ...string) {
	c.inject(injection{node: node, what: fmt.Sprintf("%s %s (explored)", kind, what),
		record: c.opFault(kind, m, redis, append([]string{node}, targets...)...)})
}

package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/metadata"

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
//     ops, every call or client request towards it, and a peer's ops run
//     for a call from it (withCallers) read it.
//   - client:<u>  a simulated client's state and what it has seen.
//   - conn:<id>/<u> the client's stream to node <id> as that node's
//     session meets it: written by the session's ops, by the client's ops
//     that open, end or change a stream (tClient: for every node), and by
//     the client seeing that stream end (tClientEnd), not by its plain
//     requests.
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
		return c.tNode(node, dst.W(connObj(node, user)))
	case system.PointTask:
		if t := c.fineTask(node, p.Key); t != nil {
			return t
		}
	case system.PointTaskDone:
		if t := c.fineTaskDone(node); t != nil {
			return t
		}
	case system.PointStreamDeliver:
		if t := c.fineStreamDeliver(node); t != nil {
			return t
		}
	case system.PointStreamWrite:
		if t := c.fineStreamStep(node); t != nil {
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

// tClient is the footprint of a client's op that may open, end or
// change its streams (a connect, a disconnect, a stall, and every action
// not known to be a plain request): its own state, its streams as the
// nodes' sessions meet them (conn:<id>/<u> for every node), and the
// liveness of every node (a request may go to any of them).
func (c *Cluster) tClient(user string) []dst.Access {
	return c.clientTouch(user, true, true)
}

// tClientRequest is the footprint of a client's op that touches only its
// own state (client:<u>) and reads the nodes' liveness: a plain request
// (create, join, leave, send: clientRequest) leaving. Its call coming
// back (tClientBack) and a delivery taken off its stream (tClientTake)
// read no liveness. What it does reaches a node only through the call it makes
// (whose handler's ops it happens before) and reads of the client's own
// state (which node to call: a stream's, set by the client's own ops), so
// it commutes with the nodes' session ops, which write conn:<id>/<u> (a
// delivery read off the stream comes after the session's send that wrote
// it, in happens-before).
func (c *Cluster) tClientRequest(user string) []dst.Access {
	return c.clientTouch(user, false, true)
}

// tClientAction is the footprint of a client's action of kind k (its
// release): tClientRequest for a plain request, else tClient.
func (c *Cluster) tClientAction(user string, k ActionKind) []dst.Access {
	return c.clientTouch(user, !clientRequest(k), true)
}

// tClientBack is the footprint of a client's call of an action of kind k
// coming back (its rpc.done gate). For a plain request it is the
// client's own state only: the call's outcome is already decided when it
// parks, and what runs after the gate is the client's record of it, then
// either a retry's back-off (a timer: the retry's call is made in a later
// event) or the actor taking its next action, which parks at its own gate
// before it calls anything. So it reads no node's liveness, and commutes
// with a crash. Other kinds keep tClient.
func (c *Cluster) tClientBack(user string, k ActionKind) []dst.Access {
	return c.clientTouch(user, !clientRequest(k), !clientRequest(k))
}

// tClientTake is the footprint of a delivery taken off a client's stream
// (its recv gate): the client's own state only. What runs after the gate
// is the delivery's record and the cursor, then the stream's next Recv,
// which blocks (or finds the stream ended, and parks at its "#<g> end"
// gate: a crash of the stream's node run before or after it leaves the
// same error there). It calls no node, so it reads no node's liveness.
func (c *Cluster) tClientTake(user string) []dst.Access {
	return c.clientTouch(user, false, false)
}

func (c *Cluster) clientTouch(user string, conn, alive bool) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	t := make([]dst.Access, 0, 2+len(c.nodes))
	t = append(t, dst.W("client:"+user))
	for _, sn := range c.nodes {
		if conn {
			t = append(t, dst.W(connObj(sn.id, user)))
		}
		if alive {
			t = append(t, dst.R("alive:"+sn.id))
		}
	}
	return t
}

// tClientEnd is the footprint of a client's stream to node ending (the
// client's recv loop saw its end): the client's state, and that one
// stream as node's session meets it (streamEnded cancels it, and node's
// session for the user runs its end up to closeSession's gate). Its
// other streams, on other nodes, are not touched.
func (c *Cluster) tClientEnd(user, node string) []dst.Access {
	if !c.Exploring() {
		return nil
	}
	return append(c.clientTouch(user, false, true), dst.W(connObj(node, user)))
}

// withCallers adds to t, the footprint of an op of node run on behalf of
// a call from a peer (its context carries a node-to-node call's incoming
// metadata: the cluster credential) or of a relay stream's delivery
// (label "recv stream ...": it runs under the node's context, then the
// handler reads the stream's next item), a read of every other node's
// liveness. The caller's crash cancels the call's context, and the op's
// code reads it (a delivery or a reply given up; a stream's next item
// refused, though the transport had it: RecvMsg in streamhooks.go): so
// the op and the crash do not commute. The call does not name its
// caller (a stream item's link does, once read), so every peer is read.
// A nil t (everything) stays nil.
func (c *Cluster) withCallers(ctx context.Context, node string, t []dst.Access) []dst.Access {
	if t == nil || !c.Exploring() || BlindCallerFootprints {
		return t
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(system.MDToken)) == 0 && !strings.HasPrefix(system.Label(ctx), "recv stream ") {
		return t
	}
	out := make([]dst.Access, len(t), len(t)+len(c.nodes))
	copy(out, t)
	for _, sn := range c.nodes {
		if sn.id != node {
			out = append(out, dst.R("alive:"+sn.id))
		}
	}
	return out
}

// connObj is user's stream to node as the node's session meets it: the
// session's ops write it, and so do the client's own ops that open, end
// or change a stream (a disconnect runs the end of its session there).
func connObj(node, user string) string { return "conn:" + node + "/" + user }

// clientRequest reports whether an action of kind k is a plain request
// (tClientRequest): one unary call, with retries, and its record.
func clientRequest(k ActionKind) bool {
	switch k {
	case ActCreate, ActJoin, ActLeave, ActSend:
		return true
	}
	return false
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
	ExDrop       = "drop"                       // a relay request (or stream write) is lost
	ExLose       = "lose"                       // a relay response is lost: the callee acted, the caller gives up
	ExError      = "error"                      // a Redis command fails
	ExDelay      = "delay"                      // a relay request is held past the caller's timeout
	ExCrash      = "crash"                      // a node crashes (a lazy op per node)
	ExBreak      = "break"                      // a relay stream breaks at its receiver as it takes an item
	ExClientDrop = "client-drop"                // a client's request to a node is lost on its way in
	ExClientLose = "client-lose"                // a client's request is handled, its answer lost on the way back
	ExClientDup  = "client-dup"                 // a client's request arrives twice (a copy runs beside it)
	ExPartition  = string(model.FaultPartition) // two nodes are partitioned until the liveness phase heals them (a lazy op per pair)
	// ExTimer fires a timer early: virtual time runs on while work is in
	// flight, until the next timer makes something park (dst.TimerClass).
	ExTimer = dst.TimerClass
	// ExReboot: a crashed node restarts inside the window (a lazy op per
	// node crashed there, or down when it opened), with a new epoch, as
	// the liveness phase would restart it.
	ExReboot = "reboot"
)

// ExploreBudget is a fault class the explorer chooses within a budget:
// the argument a story's explore block and relaysim explore's flag name
// it by, its class, and what one unit of it is (the flag's usage).
type ExploreBudget struct {
	Arg, Class, Usage string
}

// ExploreBudgets are the explorer's budgets, in the order the command
// line and the story parser list them: adding a fault class to the
// explorer is a line here (and its offer where the harness carries it out).
var ExploreBudgets = []ExploreBudget{
	{"crashes", ExCrash, "crashes a schedule may choose"},
	{"reboots", ExReboot, "crashed nodes a schedule may restart inside the window"},
	{"drops", ExDrop, "relay requests or stream writes a schedule may drop"},
	{"loses", ExLose, "relay responses a schedule may lose (the callee acted, the caller gives up)"},
	{"errors", ExError, "Redis commands a schedule may fail"},
	{"delays", ExDelay, "relay requests a schedule may hold past the caller's timeout"},
	{"breaks", ExBreak, "relay streams a schedule may break at the receiver, as it takes an item"},
	{"partitions", ExPartition, "pairs of nodes a schedule may cut off from each other (healed in the liveness phase)"},
	{"client-drops", ExClientDrop, "client requests a schedule may lose on their way in"},
	{"client-loses", ExClientLose, "client requests a schedule may handle and lose the answer of"},
	{"client-dups", ExClientDup, "client requests a schedule may deliver twice"},
	{"timers", ExTimer, "timers a schedule may fire early, between two steps of work in flight"},
}

// budgeted reports whether the explorer may choose faults of class cls
// in this run (a budget above zero). A fault offered with none would only
// be counted as cut by its budget; an op offers some (and touches more
// for them) only when it may.
func (c *Cluster) budgeted(cls string) bool {
	return c.Exploring() && c.cfg.Explorer.Budget[cls] > 0
}

// budgetedOf returns the fault classes of classes the explorer may
// choose in this run (nil outside exploration).
func (c *Cluster) budgetedOf(classes ...string) []string {
	var out []string
	for _, cls := range classes {
		if c.budgeted(cls) {
			out = append(out, cls)
		}
	}
	return out
}

// BlindCallerFootprints plants the hole withCallers closes, for the test
// that the commutation check finds it: an op run for a peer's call then
// looks independent of the caller's crash.
var BlindCallerFootprints bool

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
// the explorer may fire one, within its crash budget. With a reboot
// budget, each node that is down (crashed in the setup) gets a lazy
// reboot op (offerReboot).
func (c *Cluster) ArmExplore() {
	e := c.cfg.Explorer
	if e == nil {
		return
	}
	e.Arm(c.Sched)
	if c.budgeted(ExTimer) {
		c.Sched.OnTimer = c.timerFired
	}
	// Reboots are offered only when the search may choose one: a lazy op
	// parked is a choice at every barrier, so with no reboot budget none
	// is parked and the search is the one it was before reboots.
	c.rebootArmed = c.budgeted(ExReboot)
	c.fine = c.fineFootprints()
	c.onePerNode = !c.rebootArmed && len(c.lingering) == 0
	for _, sn := range c.nodes {
		if sn.incarnation > 1 || sn.starting || sn.stopping {
			c.onePerNode = false
		}
	}
	for i, sn := range c.nodes {
		if !sn.up {
			// Down when the window opens (a crash in the setup): it may
			// come back inside the window.
			if !sn.starting && !sn.stopping {
				c.offerReboot(i)
			}
			continue
		}
		go func() {
			if c.Sched.Gate(dst.GateSpec{Node: sn.id, Kind: "crash", ID: sn.id, Lazy: true, Class: ExCrash,
				Touch: []dst.Access{dst.W("node:" + sn.id), dst.W("alive:" + sn.id)}}) == "fire" {
				c.Inject(Fault{Kind: model.FaultCrash, Node: i})
				c.offerReboot(i)
			}
		}()
	}
	if c.budgeted(ExPartition) {
		c.armPartitions()
	}
}

// armPartitions parks a lazy op per pair of nodes that cuts the links
// between them both ways: the explorer may fire one, within its cut
// budget, and the liveness phase heals it. It touches both nodes and
// their liveness, as a crash of each would: every call between them, and
// every client request towards either, reads that (sound, if more than
// a cut needs).
func (c *Cluster) armPartitions() {
	for i := range c.nodes {
		for j := i + 1; j < len(c.nodes); j++ {
			a, b := c.nodes[i].id, c.nodes[j].id
			go func() {
				if c.Sched.Gate(dst.GateSpec{Node: "chaos", Kind: ExPartition, ID: a + "-" + b, Lazy: true, Class: ExPartition,
					Touch: []dst.Access{dst.W("node:" + a), dst.W("alive:" + a), dst.W("node:" + b), dst.W("alive:" + b)}}) == "fire" {
					c.Inject(Fault{Kind: model.FaultPartition, Node: i, Peer: j})
				}
			}()
		}
	}
}

// offerReboot parks a lazy reboot op for node i, crashed inside the
// explored window of a search with a reboot budget: the explorer may
// restart it there (SAMC's and FlyMC's "crash and reboot anywhere"), as
// the chaos injector's restart does, with a new epoch. Its footprint is
// unknown, so it is dependent with everything: a restart registers the
// node anew in Redis, bumps its epoch, opens its listener to peers and
// clients, and what its start touches is not listed here (sound, if
// slower). Called from the goroutine that crashed the node, inside the
// crash's event (the reboot is caused by the crash), or by ArmExplore for
// a node already down.
func (c *Cluster) offerReboot(i int) {
	if !c.rebootArmed || c.nodes[i].up {
		return
	}
	id := c.nodes[i].id
	go func() {
		if c.Sched.Gate(dst.GateSpec{Node: id, Kind: "reboot", ID: id, Lazy: true, Class: ExReboot}) != "fire" {
			return // the window closed, or teardown released it
		}
		c.Inject(Fault{Kind: model.FaultRestart, Node: i})
	}()
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
	// A crash fired at the horizon is not offered a reboot: the liveness
	// phase restarts it. (A reboot op parked earlier and not fired stays
	// parked, lazy, until teardown releases it.)
	c.rebootArmed = false
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
		c.offerReboot(i)
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

// timerFired records a timer the explorer fired early: virtual time ran
// on from from to to while work was in flight, so every node held its
// operations that long, as a pause of them all does (the oracle's
// excuse for what that made late; a fault the explorer chose).
func (c *Cluster) timerFired(from, to time.Duration) {
	nodes := make([]string, 0, len(c.nodes))
	for _, sn := range c.nodes {
		nodes = append(nodes, sn.id)
	}
	c.inject(injection{node: "clock", what: fmt.Sprintf("timer fired early: every node held its work from %v for %v", from, to-from),
		record: &model.Fault{From: from, To: to, Kind: model.FaultPause, Nodes: nodes}})
}

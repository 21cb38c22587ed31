package scenarios

import (
	"fmt"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// handleCrash crashes a node: its sessions, connections and in-memory
// state are gone at once, and nothing it had under way goes on.
//
// Example:
//
//	crash node=n2
func (e *Env) handleCrash(a *args) (string, error) {
	i := a.node("node", true)
	if a.err != nil {
		return "", nil
	}
	if !e.c.Up(i) {
		return "", fmt.Errorf("crash: %s is down already", e.c.NodeIDs()[i])
	}
	if err := e.c.Apply(sim.Fault{Kind: model.FaultCrash, Node: i}); err != nil {
		return "", err
	}
	return e.news(), nil
}

// handleRestart brings a crashed node back with a new epoch; peers dial the
// new incarnation and clients may connect to it again. With protocol= the
// node comes back speaking that relay protocol version, and with legacy=
// running those legacy behaviours (all, none, or some of names,
// idempotency and deregister joined by '+': system.Legacy); a node that
// is up is then restarted the way a rolling upgrade does it: stopped
// gracefully (its clients' streams end and they reconnect elsewhere) and
// started anew with them.
//
// Example:
//
//	restart node=n2 protocol=v3
//	restart node=n1 legacy=none
func (e *Env) handleRestart(a *args) (string, error) {
	i := a.node("node", true)
	v := a.protocol("protocol")
	l, setLegacy := a.legacy("legacy")
	if a.err != nil {
		return "", nil
	}
	up := e.c.Up(i)
	if up && v == 0 && !setLegacy {
		return "", fmt.Errorf("restart: %s is up (restart protocol=vN or legacy=... restarts a running node gracefully)", e.c.NodeIDs()[i])
	}
	if setLegacy {
		e.c.SetLegacy(i, l)
	}
	if up && v == 0 {
		v = e.c.Protocol(i) // a graceful restart with its own version
	}
	if v != 0 {
		if err := e.c.Apply(sim.Fault{Kind: model.FaultUpgrade, Node: i, Protocol: v}); err != nil {
			return "", err
		}
	}
	if !up {
		if err := e.c.Apply(sim.Fault{Kind: model.FaultRestart, Node: i}); err != nil {
			return "", err
		}
	}
	return e.news(), nil
}

// handlePartition cuts the links between nodes a and b both ways (without
// b=, cuts a from every other node) until heal. Relays across the cut are
// lost: their callers time out, retry and give up; clients are not cut.
//
// Example:
//
//	partition a=n1 b=n3
func (e *Env) handlePartition(a *args) (string, error) {
	x := a.node("a", true)
	y, pair := a.node("b", false), a.has("b")
	if a.err != nil {
		return "", nil
	}
	ids := e.c.NodeIDs()
	var err error
	var what string
	switch {
	case !pair:
		err, what = e.c.Isolate(x), fmt.Sprintf("%s cut off from every node", ids[x])
	case x == y:
		return "", fmt.Errorf("partition: a and b are both %s", ids[x])
	default:
		err, what = e.c.Partition(x, y), fmt.Sprintf("%s and %s cut off from each other", ids[x], ids[y])
	}
	if err != nil {
		return "", err
	}
	return what + "\n" + e.news(), nil
}

// handleHeal restores every link between nodes.
//
// Example:
//
//	heal
func (e *Env) handleHeal(*args) (string, error) {
	e.c.Heal()
	return "every link healed\n" + e.news(), nil
}

// handleDropResponses loses, for a while, the responses of the calls from
// one node to another: requests arrive and their handlers run, the answers
// never come back, so the caller times out and retries — duplicate relays
// that the receiving sessions must drop. (It is the one-way cut of the
// link to -> from, so to's own calls to from are lost meanwhile too.)
//
// Example:
//
//	drop-responses from=n1 to=n2 for=3s
func (e *Env) handleDropResponses(a *args) (string, error) {
	from, to, d := a.node("from", true), a.node("to", true), a.duration("for", true)
	if a.err != nil {
		return "", nil
	}
	if from == to {
		return "", fmt.Errorf("drop-responses: from and to are both %s", e.c.NodeIDs()[from])
	}
	if err := e.c.DropResponses(from, to, d); err != nil {
		return "", err
	}
	ids := e.c.NodeIDs()
	return fmt.Sprintf("responses %s -> %s lost for %v\n", ids[to], ids[from], d) + e.news(), nil
}

// handleRedisOutage makes every Redis command fail for a while, from now:
// sends cannot be sequenced, routes cannot be read, sessions cannot catch
// up, and everything must recover once Redis is back.
//
// Example:
//
//	redis-outage for=2s
func (e *Env) handleRedisOutage(a *args) (string, error) {
	d := a.duration("for", true)
	if a.err != nil {
		return "", nil
	}
	if err := e.c.RedisOutage(d); err != nil {
		return "", err
	}
	return fmt.Sprintf("redis down for %v\n", d) + e.news(), nil
}

// handleBreakStream closes the connections one node dialled to another, as
// a network that resets them would: relay calls in flight on them fail
// and, in stream mode, the relay stream breaks wherever it is in its
// batch. The sender must notice, dial again and resend what was not
// acknowledged (or leave it to the log).
//
// Example:
//
//	break-stream from=n1 to=n2
func (e *Env) handleBreakStream(a *args) (string, error) {
	from, to := a.node("from", true), a.node("to", true)
	if a.err != nil {
		return "", nil
	}
	ids := e.c.NodeIDs()
	if from == to {
		return "", fmt.Errorf("break-stream: from and to are both %s", ids[from])
	}
	e.c.BreakConnections(from, to)
	return fmt.Sprintf("connections %s -> %s broken\n", ids[from], ids[to]) + e.news(), nil
}

// handleForge makes one call with a forged credential, from user's client:
// call= is a Chat method (send, join, leave, create-room, connect) naming
// as= instead of user, or a Relay method (relay, relay-bulk, relay-stream)
// relaying a forged message to as= the way a node would, to the node of
// as='s stream (else node=, default n1); cred= is the credential's shape
// (system.CredShapes: missing, empty, truncated, wrong-case, other-user,
// wrong-secret, garbage, wrong-cluster). A send or relay carries the
// message id forgedN (N counts the file's forgeries). It waits for the
// outcome, which must be Unauthenticated; check judges the rest
// (forged-rejected).
//
// Example:
//
//	forge user=u1 call=relay-stream as=u2 room=r1 cred=wrong-cluster
func (e *Env) handleForge(a *args) (string, error) {
	user, call, as, cred := a.str("user", true), a.str("call", true), a.str("as", true), a.str("cred", true)
	room, node := a.str("room", false), a.node("node", false)
	if a.err != nil {
		return "", nil
	}
	if room == "" && call != "connect" {
		return "", fmt.Errorf("forge: call=%s needs room=", call)
	}
	f, err := sim.NewForgery(call, room, as, cred, e.forged+1, node)
	if err != nil {
		return "", fmt.Errorf("forge: %w", err)
	}
	e.forged++
	from := len(e.c.History().Events)
	e.c.Forge(f, user)
	if _, ok := e.await(from, actionLimit, func(ev model.Event) bool {
		return ev.Kind.Forged() && ev.User == as && ev.Room == f.Room && ev.MsgID == f.MsgID && ev.Cred == cred
	}); !ok {
		return "", fmt.Errorf("forge: the forged %s had no outcome within %v of virtual time", call, actionLimit)
	}
	return e.news(), nil
}

// handleRecvBreak arms a recv-break: the next relay stream item that
// reaches its receiver's delivery (read and claimed, its ack will cover
// it) breaks its stream there, as the sender's next write breaking or
// its watchdog firing would. The item must still be delivered; the
// sender resends it on a new stream and the receiver drops the copy.
// Only stream mode has relay streams: elsewhere it stays armed, unused.
//
// Example:
//
//	recv-break
func (e *Env) handleRecvBreak(_ *args) (string, error) {
	e.c.BreakNextDelivery()
	return "the next stream item breaks its stream at its delivery\n" + e.news(), nil
}

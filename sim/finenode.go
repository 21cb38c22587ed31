package sim

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// Fine footprints inside a node (issue 31, item 4). An op's footprint
// must cover everything that runs from its release until the bubble is
// quiet again: its own goroutine up to its next gate, and every goroutine
// that wakes because of it up to theirs. For the ops below, that code was
// read (system/, at the call sites named) and touches, of the node's
// memory, only the objects listed; every other op of the node keeps
// writing node:<id>, and these read it, so they stay dependent with
// those, with a fault carried out at any op of the node, and with a
// crash (which writes node:<id> and alive:<id>). An op run for a peer's
// call (a relay handler's, a relay stream's deliveries), fine or coarse,
// also reads every other node's liveness: the caller's crash cancels the
// call (exploring.go withCallers).
//
//	op (gate)                              what runs until the next gates            touches
//	session.send (chat.go pump)            stream.Send to the client, the pump's     session:<id>/<u>, conn:<id>/<u>
//	                                       next outbox item or its end (the
//	                                       session closes, closeSession's gate)
//	session.lock of a live delivery        the delivery (session.go deliverLive:     session:<id>/<u>, conn:<id>/<u>
//	  (label "deliver ..." or "recv         lock, last seqs, outbox push waking the
//	  RelayMessage/RelayBulkMessage/stream") pump, a release waking lock waiters, a
//	                                       kick waking the catch-up), then the
//	                                       task's end (task.done) or the relay
//	                                       handler's next recipient (reads the      (+ sessions:<id> read, in
//	                                       sessions map) or reply                    a relay handler)
//	task "deliver"/"relay"                 deliver: the lock's first gate;           (node read only)
//	                                       relay (fanout.go relayOne): the route's
//	                                       GET
//	task "bulk" (not stream mode)          relay -> relayOnce: peers.get (a hit, or   peers:<id> (read)
//	                                       its registry read), the relay call
//	task "bulk" (stream mode)              as above, then link.enqueue: the link's    peers:<id> (read),
//	                                       queue, its writer started or woken (it     links:<id>
//	                                       parks at stream.write); a refused relay
//	                                       retries after a registry read (a gate)
//	task.done (executor.go next)           the worker takes the next queued task     exec:<id> (read:
//	                                       (to its task gate) or goes idle           they commute)
//	rpc.recv of Send, Join, Leave          the handler up to its Redis script        (node read only)
//	rpc.recv of RelayMessage,              check, then deliverLocal: the sessions    sessions:<id> (read)
//	  RelayBulkMessage                      map, a recipient's lock gate, or the
//	                                       reply (the caller parks at rpc.done)
//	rpc.send of a relay call               the call reaches the peer's rpc.recv      alive:<target> (read)
//	rpc.done of a relay call that           relayOnce's next recipient (rpc.send),    (node read only)
//	  succeeded, no fault                   or relay's return and the task's end
//	redis GET route (label "relay ...",    relayOnce as for task "bulk"              peers:<id> (read)
//	  not stream mode)
//	redis HGETALL node:<t> of a relay      install: a peer added, or the one there   peers:<id>,
//	  task ("relay ...", "bulk ...") while  kept (no process to replace it by);       links:<id>
//	  every node has had one process        then relayOnce as for task "bulk", or
//	                                        relay's back-off or return (a refresh
//	                                        that finds no entry forgets the peer)
//	stream.write, a stream's rpc.send      a link's writer: fineStreamStep,          links:<id> (+ peers:<id>
//	  (open, items) and rpc.done (open,     fineStreamWrite, fineStreamAck below      written by the step)
//	  an ack covering its first item),
//	  while no break or partition is
//	  budgeted
//	a relay stream's handler: its start,   fineRecv, fineStreamItem, fineStreamEnd,  recvlinks:<id>,
//	  rpc.recv of an item or the end,       fineStreamDeliver below                   sessions:<id> (read)
//	  stream.deliver
//	redis MGET routes ("dispatch ...")     dispatch: submits the fan-out's tasks,    exec:<id>
//	                                       Send's reply
//	redis script of a send ("send ...")    dispatch (submits; a duplicate numbers     exec:<id>, retries:<id>,
//	                                       its fan-out; local members' sessions),    sessions:<id> (read)
//	                                       or the EVAL after a
//	                                       NOSCRIPT miss, or the MGET gate
//	redis script of a join or leave        the handler's reply                       (node read only)
//	redis command of a delivery task's      the rest of the fill and the delivery,    session:<id>/<u>, conn:<id>/<u>
//	  gap fill ("deliver ...")              as its session.lock above
//	redis command of a relay handler's     the rest of the fill and the delivery,    session:<id>/<r>, conn:<id>/<r>
//	  gap fill ("recv RelayMessage ...",    then the next recipients (the sessions    for every recipient r of
//	  "recv RelayBulkMessage ...")          map, their lock gates) or the reply       the call, sessions:<id> (read)
//	redis SET route:<u> and reads of the   openSession's return: the header to the   session:<id>/<u>, conn:<id>/<u>
//	  replay ("connect <u> #<g>") and of    client, the replay's start, the pump;
//	  the catch-up ("sync <u> ...")         the replay's or catch-up's fill (pushes,
//	                                       last seqs), its end or the session's
//	redis script of closeSession           the sessions map entry dropped, the       session:<id>/<u>, conn:<id>/<u>,
//	  ("connect <u> #<g>": DropRoute)        handler's end (the stream count), the     sessions:<id>, connects:<id>
//	                                       client's stream end
//	rpc.recv of Connect                    the session made (the node's gen and       connects:<id>, conn:<id>/<u>
//	                                       stream count), up to session.open
//	session.open                           the sessions map, the older session of     session:<id>/<u>, conn:<id>/<u>,
//	                                       the user closed, up to the route's SET     sessions:<id>
//	session.close                          the route's drop (a gate), or the          session:<id>/<u>, conn:<id>/<u>,
//	                                       sessions map entry dropped and the         sessions:<id>, connects:<id>
//	                                       handler's end
//	session.lock of the replay or the      the fill, as the Redis commands above      session:<id>/<u>, conn:<id>/<u>
//	  catch-up
//
// Every op that touches a session of node <id> writes the client's stream
// to that node too (conn:<id>/<u>): the client's own ops that open or end
// one (a disconnect, a reconnect) run the end of its session on the node
// (the pump, closeSession up to its gate). Those client ops write
// conn:<id>/<u> for every node, but for a stream's end seen by the client
// (its recv loop's "#<g> end"), which touches only that stream's node
// (exploring.go tClientEnd): so the ops of the session a user leaves and
// of the one it moves to commute unless they meet in Redis. The client's
// plain requests and the deliveries it takes write only client:<u>
// (exploring.go tClientRequest). The sessions map is read by Send's
// dispatch and by a relay handler's delivery (sessions:<id>).
//
// What stays coarse: a stream link's ops while a break or a partition is
// budgeted, a stream write or ack that failed (the writer's give-up,
// isolation and hand-over run from there), a registry read once a node
// has had a second process (its install may
// replace a peer: new connections and links, the old peer closed, calls
// in flight on it fail), a relay call that failed (retry, back-off, the
// peer forgotten or refreshed, a downgrade), caller-runs tasks, the
// peer refresh's other registry reads, and every op when a node runs
// legacy behaviours or an older protocol.

// CoarseNodeFootprints turns the fine footprints off: every op of a node
// writes node:<id> again (for comparison: the measurements and tests run
// both).
var CoarseNodeFootprints bool

// fineFootprints reports whether this run's nodes get fine footprints:
// exploring, not turned off, and every node on the latest protocol with
// no legacy behaviour (the table above reads the current code paths only).
func (c *Cluster) fineFootprints() bool {
	if CoarseNodeFootprints {
		return false
	}
	for _, sn := range c.nodes {
		if sn.legacy != (system.Legacy{}) || sn.protocol != system.ProtocolLatest {
			return false
		}
	}
	return true
}

// tFine is the footprint of an op of node whose code touches, of the
// node's memory, only extra's objects: it reads the node's memory and
// liveness.
func (c *Cluster) tFine(node string, extra ...dst.Access) []dst.Access {
	return append([]dst.Access{dst.R("node:" + node), dst.R("alive:" + node)}, extra...)
}

func sessionObj(node, user string) string { return "session:" + node + "/" + user }

// sess is the fine footprint of code that touches user's sessions on
// node: every such op writes the client too, as the client's own ops
// (a disconnect, a reconnect) run the session's end on the node.
func (c *Cluster) sess(node, user string, extra ...dst.Access) []dst.Access {
	return c.tFine(node, append([]dst.Access{dst.W(sessionObj(node, user)), dst.W(connObj(node, user))}, extra...)...)
}

// connectWork is the fine footprint of a Connect handler's own work on
// user's session after it registered it (its route written, the replay,
// its end: the sessions map, the node's stream count, closeSession).
func (c *Cluster) connectWork(node, user string) []dst.Access {
	return c.sess(node, user, dst.W("sessions:"+node), dst.W("connects:"+node))
}

// sessionLabel splits the operation label of a session's own goroutines,
// "connect <user> #<gen>" (the Connect handler and its replay) and "sync
// <user> #<gen> tick<n>" (the catch-up), into their kind and user.
func sessionLabel(label string) (kind, user string) {
	f := strings.Fields(label)
	if len(f) < 3 || !strings.HasPrefix(f[2], "#") {
		return "", ""
	}
	switch {
	case f[0] == "connect" && len(f) == 3, f[0] == "sync" && len(f) == 4 && strings.HasPrefix(f[3], "tick"):
		return f[0], f[1]
	}
	return "", ""
}

// fineSession is the fine footprint of a session point of user on node,
// or nil (coarse).
func (c *Cluster) fineSession(node, user, kind, label string) []dst.Access {
	if !c.fine {
		return nil
	}
	switch kind {
	case system.PointSessionSend:
		return c.sess(node, user)
	case system.PointSessionOpen:
		return c.sess(node, user, dst.W("sessions:"+node))
	case system.PointSessionClose:
		return c.connectWork(node, user)
	case system.PointSessionLock:
		switch {
		case strings.HasPrefix(label, "deliver "):
			return c.sess(node, user)
		case strings.HasPrefix(label, "recv RelayMessage "), strings.HasPrefix(label, "recv RelayBulkMessage "), strings.HasPrefix(label, "recv stream "):
			return c.sess(node, user, dst.R("sessions:"+node))
		}
		if k, u := sessionLabel(label); k != "" && u == user {
			return c.sess(node, user) // the replay's or the catch-up's fill
		}
	}
	return nil
}

// fineTask is the fine footprint of a task about to run on a worker
// (label: the task's), or nil.
func (c *Cluster) fineTask(node, label string) []dst.Access {
	if !c.fine {
		return nil
	}
	switch {
	case strings.HasPrefix(label, "deliver "), strings.HasPrefix(label, "relay "):
		return c.tFine(node)
	case strings.HasPrefix(label, "bulk ") && c.cfg.Mode != system.ModeStream:
		return c.tFine(node, dst.R("peers:"+node))
	case strings.HasPrefix(label, "bulk "):
		// Stream mode: the relay queues on a link and wakes its writer,
		// which parks at its stream.write gate.
		return c.tFine(node, dst.R("peers:"+node), dst.W("links:"+node))
	}
	return nil
}

// fineTaskDone is the fine footprint of a worker done with its task. It
// reads the executor, though it changes it: two workers done commute (a
// worker takes the next queued task or goes idle, and tasks and their
// gates are named by their labels, never by the worker that runs them,
// so either order leaves the same tasks parked and the same counts),
// and every op that submits writes exec:<id>, so a submit and a worker
// done stay dependent (the task goes to that idle worker, or a new one).
func (c *Cluster) fineTaskDone(node string) []dst.Access {
	if !c.fine {
		return nil
	}
	return c.tFine(node, dst.R("exec:"+node))
}

// fineRecv is the fine footprint of an incoming call's handler (id: the
// call's, callID), or nil.
func (c *Cluster) fineRecv(node, method, id string) []dst.Access {
	if !c.fine {
		return nil
	}
	switch method {
	case relaypb.Chat_Send_FullMethodName, relaypb.Chat_Join_FullMethodName, relaypb.Chat_Leave_FullMethodName:
		return c.tFine(node)
	case relaypb.Relay_RelayMessage_FullMethodName, relaypb.Relay_RelayBulkMessage_FullMethodName:
		return c.tFine(node, dst.R("sessions:"+node))
	case relaypb.Relay_RelayStream_FullMethodName:
		// The handler starts: its incarnation read from the metadata,
		// then its first item (its rpc.recv gate, fineStreamItem) or the
		// stream's end.
		return c.tFine(node)
	case relaypb.Chat_Connect_FullMethodName:
		// "Connect <user> #<gen>": the client's operation names the user,
		// percent-encoded (opLabel): a name holding '%' after encoding is
		// not its own, and stays coarse.
		f := strings.Fields(id)
		if len(f) == 3 && f[0] == "Connect" && strings.HasPrefix(f[2], "#") && !strings.Contains(f[1], "%") {
			return c.tFine(node, dst.W("connects:"+node), dst.W(connObj(node, f[1])))
		}
	}
	return nil
}

// fineStreamItem is the fine footprint of a relay stream's item taken by
// its handler (system/stream.go RelayStream), or nil: its checks (the
// node's config and epoch, fixed for the incarnation), its claim on the
// link (the node's map of links seen, recvlinks:<id>), then its
// stream.deliver gate; a duplicate's next item or the stream's end; a
// link older than the newest seen settles with a registry read (a gate),
// or is refused (the handler returns, the stream ends).
func (c *Cluster) fineStreamItem(node string) []dst.Access {
	if !c.fine {
		return nil
	}
	return c.tFine(node, dst.W("recvlinks:"+node))
}

// fineStreamEnd is the fine footprint of a relay stream's end at its
// handler, or nil: the link's ack (read from recvlinks:<id>) or the
// error, and the handler's return.
func (c *Cluster) fineStreamEnd(node string) []dst.Access {
	if !c.fine {
		return nil
	}
	return c.tFine(node, dst.R("recvlinks:"+node))
}

// fineStreamDeliver is the fine footprint of a claimed stream item's
// delivery (stream.deliver), or nil: deliverLocal, as a relay handler's
// (the sessions map, each recipient's lock gate), then the handler's next
// item or end (their rpc.recv gates).
func (c *Cluster) fineStreamDeliver(node string) []dst.Access {
	if !c.fine {
		return nil
	}
	return c.tFine(node, dst.R("sessions:"+node))
}

// streamFaultFree reports whether no fault can end a relay stream inside
// a step of its writer's (between two gates, with no gate of its own):
// a receiver-side break sets the error the writer's next write or ack
// returns, a partition fails a write at once; either takes the writer
// through its failure paths (give-up, isolation, hand-over: tasks, peers)
// in the op that meets it. With neither budgeted, a write's failure comes
// back at its own gate (rpc.done ... failed), which is coarse.
func (c *Cluster) streamFaultFree() bool {
	return !c.budgeted(ExBreak) && !c.budgeted(ExPartition) && !c.faults.mix.NetFaults()
}

// fineStreamWrite is the fine footprint of a relay stream's item about to
// be written (rpc.send), or nil: the write, then the writer's step goes
// on (system/stream.go step: its next item, its ack's close, or back to
// waiting for the link's wake-up or linger, to its stream.write gate),
// touching only its link's state (links:<id>). A dropped write is a
// faulted choice (it writes node:<id>). The same for the stream's open
// (rpc.send): the stream opened on the peer's channel, to its rpc.done
// gate (opened or failed).
func (c *Cluster) fineStreamWrite(node, target string) []dst.Access {
	if !c.fine || !c.streamFaultFree() {
		return nil
	}
	return c.tFine(node, dst.W("links:"+node), dst.R("alive:"+target))
}

// fineStreamStep is the fine footprint of a link's writer about to take
// its queued items (stream.write), or nil. Its step (system/stream.go run
// and step) numbers the queue into the unacked items (links:<id>), then
// opens a stream on the peer's channel (read from peers:<id>; its
// rpc.send gate), writes (rpc.send), or closes for the ack (rpc.done);
// every failure of those comes back at their gates. A link found closed
// (its peer replaced or forgotten) hands its items over: relays on the
// peer's current links (the peers map, their queues, their writers
// woken), or the registry read of a peer not installed (a gate). It
// writes peers:<id> for the hand-over's relays, whose failures may
// forget a peer.
func (c *Cluster) fineStreamStep(node string) []dst.Access {
	if !c.fine {
		return nil
	}
	return c.tFine(node, dst.W("links:"+node), dst.W("peers:"+node))
}

// fineStreamAck is the fine footprint of a relay stream's ack back at its
// writer, when it came back, unbroken, covering at least the first item
// written on the stream (so the writer counts it as progress, not as an
// empty ack), or nil: the link's unacked items dropped, then its writer
// waits for a wake-up (its stream.write gate). The same for a stream
// opened (rpc.done ... open): the linger timer set, then the first
// item's write (rpc.send).
func (c *Cluster) fineStreamAck(node string) []dst.Access {
	if !c.fine || !c.streamFaultFree() {
		return nil
	}
	return c.tFine(node, dst.W("links:"+node))
}

// relayUnary: a unary relay call (single or bulk).
func relayUnary(method string) bool {
	return method == relaypb.Relay_RelayMessage_FullMethodName || method == relaypb.Relay_RelayBulkMessage_FullMethodName
}

// fineCall is the fine footprint of node's relay call towards target
// about to leave, or nil.
func (c *Cluster) fineCall(node, target, method string) []dst.Access {
	if !c.fine || !relayUnary(method) {
		return nil
	}
	return c.tFine(node, dst.R("alive:"+target))
}

// fineCallDone is the fine footprint of a relay call back at its caller
// (ok: it succeeded and no fault follows at the caller), or nil.
func (c *Cluster) fineCallDone(node, method string, ok bool) []dst.Access {
	if !c.fine || !ok || !relayUnary(method) {
		return nil
	}
	return c.tFine(node)
}

// recipientsKey carries, in a relay handler's context, the recipients of
// the relayed message (serverUnary sets it while exploring).
type recipientsKey struct{}

func withRecipients(ctx context.Context, req any) context.Context {
	var users []string
	switch r := req.(type) {
	case *relaypb.RelayBulkMessageRequest:
		users = r.GetRecipients()
	case *relaypb.RelayMessageRequest:
		users = []string{r.GetRecipient()}
	}
	return context.WithValue(ctx, recipientsKey{}, users)
}

// fineRedis is the fine footprint of node's Redis commands made under
// ctx, without their keys, or nil.
func (c *Cluster) fineRedis(ctx context.Context, node string, cmds []redis.Cmder) []dst.Access {
	if !c.fine || len(cmds) != 1 {
		return nil
	}
	label := system.Label(ctx)
	if strings.HasPrefix(label, "recv RelayMessage ") || strings.HasPrefix(label, "recv RelayBulkMessage ") {
		// A relay handler's gap fill, for one of its recipients: the
		// rest of its delivery, then deliverLocal's next recipients (the
		// sessions map, their lock gates) or the reply.
		users, ok := ctx.Value(recipientsKey{}).([]string)
		if !ok || len(users) == 0 {
			return nil
		}
		t := c.tFine(node, dst.R("sessions:"+node))
		for _, u := range users {
			t = append(t, dst.W(sessionObj(node, u)), dst.W(connObj(node, u)))
		}
		return t
	}
	name := strings.ToLower(cmds[0].Name())
	script := name == "evalsha" || name == "eval"
	switch {
	case strings.HasPrefix(label, "relay ") && name == "get" && c.cfg.Mode != system.ModeStream:
		return c.tFine(node, dst.R("peers:"+node))
	case (strings.HasPrefix(label, "relay ") || strings.HasPrefix(label, "bulk ")) && name == "hgetall" && c.onePerNode:
		// A relay task's registry read (peers.go get, or refresh after a
		// failed call): with one process per node the entry names the
		// one the peer map may hold, so install adds a peer or keeps
		// the one there, and closes none. Then relayOnce as for task
		// "bulk" (its call, or the link's queue in stream mode), or
		// relay's back-off (a timer) or return. A refresh that finds
		// the entry gone forgets the peer: its links closed (their
		// writers woken), its connections closed (calls in flight on
		// them fail, at their rpc.done gates).
		return c.tFine(node, dst.W("peers:"+node), dst.W("links:"+node))
	case strings.HasPrefix(label, "dispatch ") && name == "mget":
		return c.tFine(node, dst.W("exec:"+node))
	case strings.HasPrefix(label, "send ") && script:
		return c.tFine(node, dst.W("exec:"+node), dst.W("retries:"+node), dst.R("sessions:"+node))
	case (strings.HasPrefix(label, "join ") || strings.HasPrefix(label, "leave ")) && script:
		return c.tFine(node)
	}
	if strings.HasPrefix(label, "deliver ") {
		// A local delivery task's gap fill: "deliver <room>#<seq>[
		// retry<n>] <user>" (fanout.go), under the session's lock.
		f := strings.Fields(label)
		return c.sess(node, f[len(f)-1])
	}
	switch k, u := sessionLabel(label); {
	case k == "connect" && script:
		return c.connectWork(node, u) // closeSession's DropRoute
	case k != "":
		return c.sess(node, u) // the route's SET, the replay's and the catch-up's reads
	}
	return nil
}

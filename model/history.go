// Package model is the oracle of relaysim: the reference semantics of the chat
// relay and the checkers that judge a run. Every checker is a pure function of
// a History. The model never imports the system it judges (system/) nor the
// simulator (sim/): it defines the history types and sim/ records into them.
//
// The oracle takes nothing on the relay's word. Its inputs are what the
// clients saw (every call with its invocation and its completion, every
// delivery), the room logs read at the end (the only server state it reads),
// the faults the simulator injected, and work counted from outside the
// relay (tasks at the executor's gates, goroutines by label, connections on
// the simulated network). Membership windows are derived from the join and
// leave acks the clients received and checked against real-time order; the
// relay's own window records are never read.
package model

import "time"

// Kind names a client-visible event.
type Kind string

const (
	// KindCreateRoom: a room was created (OK) or the attempt failed.
	KindCreateRoom Kind = "create-room"
	// KindConnect: the user's client opened its delivery stream on Node
	// (OK), sending Cursors; or the attempt failed (Err).
	KindConnect Kind = "connect"
	// KindDisconnect: the client closed its stream (Vanish false, Err
	// empty), stopped reading without closing it (Vanish true), or saw the
	// server end it (Err holds the status).
	KindDisconnect Kind = "disconnect"
	// KindJoin: a join call returned. On success Seq is the first seq of the
	// membership window (JoinResponse.from_seq).
	KindJoin Kind = "join"
	// KindLeave: a leave call returned. On success Seq is the last seq of the
	// window that ended (LeaveResponse.to_seq).
	KindLeave Kind = "leave"
	// KindSend: a send call returned. On success Seq is the acked seq and
	// Duplicate says the ack reported an earlier sequencing of the MsgID.
	KindSend Kind = "send"
	// KindDeliver: the client received Room/Seq/MsgID on its stream on Node.
	KindDeliver Kind = "deliver"
	// KindSessionClosed: a node closed the server side of User's stream
	// (observed on the node, not by the client).
	KindSessionClosed Kind = "session-closed"
	// KindPanic: a node recovered a panicking executor task (Err holds the
	// task label and the panic value).
	KindPanic Kind = "panic"
	// The forged kinds: a call of one Chat or Relay method made with a
	// credential that is not the one it needs (a fault the simulator
	// injects; Cred names its shape). A Chat call acts for User: a send of
	// MsgID to Room, a join or leave of Room, a room's creation, a delivery
	// stream. A Relay call is made to Node as a node would make it: a relay
	// of a message (MsgID, of Room) to User, one at a time, in bulk or on a
	// relay stream. They are kinds of their own so that no checker of real
	// calls counts them; CheckForgedRejected judges them.
	KindForgedSend        Kind = "forged-send"
	KindForgedJoin        Kind = "forged-join"
	KindForgedLeave       Kind = "forged-leave"
	KindForgedCreateRoom  Kind = "forged-create-room"
	KindForgedConnect     Kind = "forged-connect"
	KindForgedRelay       Kind = "forged-relay"
	KindForgedRelayBulk   Kind = "forged-relay-bulk"
	KindForgedRelayStream Kind = "forged-relay-stream"
)

// ForgedKinds lists the forged kinds, one per Chat and Relay method.
var ForgedKinds = []Kind{KindForgedSend, KindForgedJoin, KindForgedLeave, KindForgedCreateRoom, KindForgedConnect,
	KindForgedRelay, KindForgedRelayBulk, KindForgedRelayStream}

// Forged reports whether k is a forged call's kind.
func (k Kind) Forged() bool {
	for _, f := range ForgedKinds {
		if k == f {
			return true
		}
	}
	return false
}

// carriesMsg reports whether a forged call of kind k carries a message
// (MsgID) that must reach no room log and no one.
func (k Kind) carriesMsg() bool {
	switch k {
	case KindForgedSend, KindForgedRelay, KindForgedRelayBulk, KindForgedRelayStream:
		return true
	}
	return false
}

// Event is one entry of a run's history. Fields that do not apply to a kind
// are zero. Client calls carry their invocation (Invoked, InvokedLine) and
// their completion (Time, TraceLine), as in Jepsen and porcupine histories;
// for instantaneous events the two coincide.
type Event struct {
	Time time.Duration // virtual time since the start of the run (completion)
	Kind Kind
	User string
	Room string
	Node string // the node the call was answered by, or the stream's node
	Seq  uint64
	// MsgID is the client message id (sends and deliveries).
	MsgID string
	// Sender is, for a delivery, the sender the delivery carried (empty:
	// not recorded). A send's sender is User.
	Sender string `json:",omitempty"`
	// Payload is the digest (PayloadDigest) of the payload a send sent or
	// a delivery carried (0: not recorded).
	Payload uint64 `json:",omitempty"`
	// Steal marks a send made with another user's client message id (a
	// steal fault): a real send by User, judged as one.
	Steal bool   `json:",omitempty"`
	OK    bool   // the call succeeded (join, leave, send, create-room, connect)
	Err   string // the call's gRPC status code, when !OK
	// Vanish marks a disconnect where the client stopped reading without
	// closing the stream.
	Vanish bool
	// FromLog marks a delivery replayed or gap-filled from the room log.
	FromLog bool
	// Duplicate is a send ack's duplicate flag.
	Duplicate bool
	// Size is a send's payload size in bytes, as the client sent it.
	Size int
	// Tries is how many times the client tried the call (1: no retry).
	Tries int
	// Cursors are the per-room cursors a connect sent.
	Cursors map[string]uint64
	// Invoked is when the call was invoked (== Time when zero and
	// InvokedLine is zero).
	Invoked time.Duration
	// InvokedLine is the trace line at the invocation (0: unknown).
	InvokedLine int
	// TraceLine is the 1-based line of the run's trace that shows the event
	// (0: unknown). Violations cite it as evidence.
	TraceLine int
	// Cred is a forged call's credential shape (see the forged kinds).
	Cred string `json:",omitempty"`
}

// inv is the invocation instant of a call.
func (e Event) inv() instant {
	if e.Invoked == 0 && e.InvokedLine == 0 {
		return instant{e.Time, e.TraceLine}
	}
	return instant{e.Invoked, e.InvokedLine}
}

// done is the completion instant of a call.
func (e Event) done() instant { return instant{e.Time, e.TraceLine} }

// instant orders events in real time: virtual time first, then the trace
// line (the scheduler releases one operation at a time, so within one
// virtual instant the trace line is the real order). Line 0 is unknown and
// orders before every known line of the same time.
type instant struct {
	t    time.Duration
	line int
}

func (a instant) before(b instant) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.line < b.line
}

// LogEntry is one entry of a room log as read from the directory at the end
// of the run. Seq is its position (1-based).
type LogEntry struct {
	Seq    uint64
	MsgID  string
	Sender string
	// Payload is the digest (PayloadDigest) of the entry's payload (0:
	// not recorded).
	Payload uint64 `json:",omitempty"`
}

// Window is a membership window: the user receives the room's messages with
// From <= seq <= To. To == 0 means the window is still open (unbounded).
type Window struct {
	From uint64
	To   uint64
}

// Contains reports whether seq falls inside the window.
func (w Window) Contains(seq uint64) bool {
	return seq >= w.From && (w.To == 0 || seq <= w.To)
}

// Final is the server state read after the run: the room logs only.
type Final struct {
	// Logs maps room to its log in seq order.
	Logs map[string][]LogEntry
	// LeftoverGoroutines describes goroutines still alive after teardown
	// (empty when teardown was clean).
	LeftoverGoroutines []string
}

// Sample is a snapshot of one node taken at a quiescent point. Every count
// is taken from outside the relay: gRPC's stats handler, the simulated
// network, the scheduler's gates and the goroutine profile.
type Sample struct {
	Time time.Duration
	Node string
	// Core and Max are the configured pool sizes.
	Core, Max int
	// Running is the number of tasks running on workers at the sample and
	// PeakRunning the most at once since the previous sample, both counted
	// at the executor's gates (a task passed its start gate and has not yet
	// reached its done gate).
	Running, PeakRunning int
	// Workers counts the node's live worker goroutines (idle or busy) in
	// the goroutine profile (-1: not measured).
	Workers int
	// Goroutines counts every goroutine labelled with the node (-1: not
	// measured).
	Goroutines int
	// OpenStreams counts server-side Connect streams open (gRPC stats);
	// Sessions is the node's registered sessions (the relay's own count:
	// compared with OpenStreams, never trusted alone).
	OpenStreams int
	Sessions    int
	// Transitions counts sessions caught between being opened or closed
	// and being (un)registered at the sample; stream equality is only
	// checked when it is zero.
	Transitions int
	// InConns and OutConns are the node's open transport connections on the
	// simulated network: accepted by it, and dialled by it to peers.
	InConns, OutConns int
	// PeerRunning is the tasks running on the other nodes' workers at the
	// sample (each may hold one relay call in this node's handlers).
	PeerRunning int
	// LivePeers is the number of other nodes up and Peers the number of
	// other nodes (a node keeps its channels to a peer that is down until
	// it notices); ChannelsPerPeer the configured channels to each.
	LivePeers, Peers, ChannelsPerPeer int
	// Idle marks a sample taken after the cluster was idle for longer than
	// the executor keep-alive (the pool must be back at core).
	Idle bool
}

// Tasks is what a node's executor gates saw of one message: the tasks that
// reached their start gate for its first dispatch (Retry false) or for a
// retried send's dispatch (Retry true).
type Tasks struct {
	Node, Room string
	Seq        uint64
	Retry      bool
	Count      int
	First      time.Duration
	TraceLine  int
}

// Fault is something the simulator did to the system. A timed fault spans
// [From, To] (To < 0: it never ended); a per-operation fault (Op) hit one
// operation at From and names the message it belonged to (Msg "room#seq"),
// if any.
type Fault struct {
	From, To time.Duration
	Kind     FaultKind
	Op       bool
	// Nodes are the nodes it touches (a link: both ends).
	Nodes []string
	// User is the client it touches (vanish, slow consumer).
	User string
	// Redis marks faults of Redis (outages, spikes, route flushes, command
	// errors).
	Redis     bool
	Msg       string
	TraceLine int
}

// Version says that node's incarnation started at From runs relay
// protocol version Protocol (1: single only, 2: adds bulk, 3: adds stream),
// as the harness started it.
type Version struct {
	Node     string
	From     time.Duration
	Protocol int
}

// Limits says that node's incarnation started at From refuses a relayed
// message whose payload is longer than MaxPayload bytes, or a relay call
// (a bulk call, a stream item) naming more than MaxRecipients recipients,
// as the harness configured it (system.Config). During a config rollout
// nodes differ.
type Limits struct {
	Node                      string
	From                      time.Duration
	MaxPayload, MaxRecipients int
}

// History is everything a run recorded for the checkers.
type History struct {
	Mode string // the configured relay mode: "single", "bulk" or "stream"
	// Versions are the nodes' protocol versions over time, in start order
	// (none: every node the latest).
	Versions []Version
	// Limits are the nodes' limits over time, in start order (none: no
	// node refuses what a client may send).
	Limits []Limits
	Events []Event
	// Deliveries holds deliveries compactly (the simulator records them
	// there, not in Events); read every delivery with EachDelivery.
	Deliveries *DeliveryLog
	Samples    []Sample
	Tasks      []Tasks
	Faults     []Fault
	Final      Final
	// KeepAliveBound is the virtual time within which a node must close the
	// stream of a client that vanished.
	KeepAliveBound time.Duration
	// CloseBound is the virtual time within which a node must close the
	// stream of a client that closed it (0: unchecked).
	CloseBound time.Duration
	// LiveBound is the time within which a connected member must receive a
	// message whose path no fault touched (0: timely delivery unchecked).
	LiveBound time.Duration
	// SendBound is the time within which a send must return on its first
	// try while another user's client misbehaves (isolation; 0:
	// unchecked): the clients' call deadline.
	SendBound time.Duration
	// Recovery is how long after a timed fault of a kind its effects may
	// still delay live deliveries (reconnect back-off, route refresh, the
	// keep-alive of a vanished stream); kinds absent use Recovery[RecoveryDefault].
	Recovery map[FaultKind]time.Duration
	// Links are the relay stream links as the harness counted them on
	// the wire (bounded-backlog).
	Links []LinkBacklog
	// LogReads are the room-log reads each node made, as the harness
	// counted them at its Redis gate (bounded-replay-memory).
	LogReads []LogReads
	// Registry are the commands an incarnation ran on its node's registry
	// entry while the entry named a newer incarnation, as the harness
	// watched them (newest-registration-kept).
	Registry []RegistryWrite
	// StrictFrom is when the cluster had healed and settled in the
	// liveness phase (the heal plus a settle time derived from the
	// configuration): a send invoked from then on is judged for timely
	// delivery with no fault excuse (0: none is).
	StrictFrom time.Duration
	// StaleLinkDelay is how much later than LiveBound a strictly judged
	// stream-mode relay may arrive: a sender's link may still hold a
	// stream the fault phase left stale (bound for a node's previous
	// incarnation, or cut and idle since), and the writer learns of it
	// only when it next writes or closes the stream (the stream linger).
	StaleLinkDelay time.Duration
	// FaultFree says the harness injected no fault in the run and recorded
	// none but the relay's own stream refusals (a churn-only, calm or
	// -faults=false run): timely-live-delivery has no fault to excuse a
	// late delivery with, so it judges every acked send, one the client
	// retried too, with no fault excuse (churn excuses what it must: a
	// member whose window or stream did not hold the whole send).
	FaultFree bool
	// Recipients is, per message and receiving node ("room#seq>node"),
	// the most recipients one relay call or stream item carrying it to
	// that node named, as the harness saw them on the wire (nil: not
	// recorded; the refused-message excuse then estimates them).
	Recipients map[string]int
	// LinkItems are the relay stream items the harness saw written, in
	// order; ItemHop is the longest a receiving node may take per gated
	// step of handing an item over (the cost model's hop). A message
	// relayed on a stream waits at the receiver for the items written on
	// its link before it: timely-live-delivery allows for them (0: no
	// allowance).
	LinkItems []LinkItem
	ItemHop   time.Duration
	// Relays are the node-to-node relay calls the harness saw (CheckRelayMode).
	Relays []RelayCall
	// LinkEvents are what the harness saw of the relay stream links, in
	// order (CheckStreamBackoff); RelayBackoff is the writer's back-off
	// step (0: unchecked).
	LinkEvents   []LinkEvent
	RelayBackoff time.Duration
	// ModeRefresh is how long after a node's version change a relay
	// between it and a peer may still use the mode of the peer's previous
	// incarnation: the registry's refresh interval (0: relay modes are
	// unchecked).
	ModeRefresh time.Duration
	// BadNodeStarts are the harness's attempts to start a node with a
	// malformed id (CheckBadNodeIDs).
	BadNodeStarts []BadNodeStart
	// GoroutineBound returns the most goroutines a node may have at a
	// sample, from its connections and the pool maximum (nil: unchecked).
	GoroutineBound func(s Sample) int
}

// modes are the relay modes in the order of the protocol version each
// needs (v1 single, v2 bulk, v3 stream).
var modes = []string{"single", "bulk", "stream"}

// ModeAt is the mode node relayed in at t: the configured mode, capped by
// the protocol version its incarnation at t runs (the harness recorded it).
func (h *History) ModeAt(node string, t time.Duration) string {
	v := len(modes)
	for _, x := range h.Versions {
		if x.Node == node && x.From <= t {
			v = x.Protocol
		}
	}
	for i, m := range modes {
		if m == h.Mode {
			v = min(v, i+1)
		}
	}
	if v < 1 || v > len(modes) {
		return h.Mode
	}
	return modes[v-1]
}

// PayloadDigest is the 64-bit digest of a payload the oracle compares
// deliveries, sends and room log entries by (FNV-1a; never 0, which marks
// a payload not recorded). The histories are not adversarial: a run's few
// thousand payloads collide with probability ~1e-12.
func PayloadDigest(p []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211 // FNV-1a 64 (hash/fnv), without its allocation
	d := uint64(offset)
	for _, b := range p {
		d ^= uint64(b)
		d *= prime
	}
	if d == 0 {
		return 1
	}
	return d
}

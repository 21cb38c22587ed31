// Package model is the oracle of relaysim: the reference semantics of the chat
// relay and the checkers that judge a run. Every checker is a pure function of
// a History. The model never imports the system it judges (system/) nor the
// simulator (sim/): it defines the history types and sim/ records into them.
package model

import "time"

// Kind names a client-visible event.
type Kind string

const (
	// KindCreateRoom: a room was created (OK) or the attempt failed.
	KindCreateRoom Kind = "create-room"
	// KindConnect: the user's client opened its delivery stream on Node.
	KindConnect Kind = "connect"
	// KindDisconnect: the client closed its stream (Vanish false) or stopped
	// reading without closing it (Vanish true).
	KindDisconnect Kind = "disconnect"
	// KindJoin: a join call returned. On success Seq is the first seq of the
	// membership window (JoinResponse.from_seq).
	KindJoin Kind = "join"
	// KindLeave: a leave call returned. On success Seq is the last seq of the
	// window that ended (LeaveResponse.to_seq).
	KindLeave Kind = "leave"
	// KindSend: a send call returned. On success Seq is the acked seq.
	KindSend Kind = "send"
	// KindDeliver: the client received Room/Seq/MsgID on its stream.
	KindDeliver Kind = "deliver"
	// KindSessionClosed: a node closed the server side of User's stream
	// (observed on the node, not by the client).
	KindSessionClosed Kind = "session-closed"
)

// Event is one entry of a run's history. Fields that do not apply to a kind
// are zero.
type Event struct {
	Time  time.Duration // virtual time since the start of the run
	Kind  Kind
	User  string
	Room  string
	Node  string
	Seq   uint64
	MsgID string // client message id (sends and deliveries)
	OK    bool   // the call succeeded (join, leave, send, create-room)
	Err   string // the call's error, when !OK
	// Vanish marks a disconnect where the client stopped reading without
	// closing the stream.
	Vanish bool
	// FromLog marks a delivery replayed or gap-filled from the room log.
	FromLog bool
	// TraceLine is the 1-based line of the run's trace that shows the event
	// (0: unknown). Violations cite it as evidence.
	TraceLine int
}

// LogEntry is one entry of a room log as read from the directory at the end
// of the run. Seq is its position (1-based).
type LogEntry struct {
	Seq    uint64
	MsgID  string
	Sender string
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

// Final is the authoritative state read from the directory after the run.
type Final struct {
	// Logs maps room to its log in seq order.
	Logs map[string][]LogEntry
	// Windows maps room, then user, to the user's membership windows in order.
	Windows map[string]map[string][]Window
	// LeftoverGoroutines describes goroutines still alive after teardown
	// (empty when teardown was clean).
	LeftoverGoroutines []string
}

// Sample is a snapshot of one node's metrics taken at a quiescent point.
type Sample struct {
	Time time.Duration
	Node string
	// Executor.
	Core, Max             int
	Pool, Active, Queued  int
	Peak                  int
	Completed, CallerRuns int64
	// Streams and connections.
	OpenStreams int // server-side Connect streams currently open
	Sessions    int // sessions registered as connected
	// Transitions counts sessions caught between being opened or closed
	// and being (un)registered at the sample; stream equality is only
	// checked when it is zero.
	Transitions     int
	PeerConns       int // open client connections to other nodes
	LivePeers       int // peers the node currently holds connections for
	ChannelsPerPeer int
	// Goroutines is the number of goroutines of the whole simulated cluster
	// at the sample (0: not measured). Connections is the number of open
	// transport connections in the cluster at the sample.
	Goroutines  int
	Connections int
	// Idle marks a sample taken after the cluster was idle for longer than
	// the executor keep-alive (the pool must be back at core).
	Idle bool
}

// Dispatch is the first fan-out of one message by its sender's node, or a
// later one (Retry) caused by a retried send.
type Dispatch struct {
	Time  time.Duration
	Node  string
	Room  string
	Seq   uint64
	Mode  string // "single" or "bulk"
	Retry bool
	// Members is the membership the node read atomically with the seq.
	Members []string
	// Local are members with a session on the dispatching node.
	Local []string
	// Routes maps each non-local member to the server the routing table
	// named ("" when none). In single mode it is filled from the per-recipient
	// look-ups, in bulk mode from the one MGET.
	Routes map[string]string
	// Tasks is the number of executor tasks the dispatch submitted.
	Tasks     int
	TraceLine int
}

// History is everything a run recorded for the checkers.
type History struct {
	Mode       string // "single" or "bulk"
	Events     []Event
	Samples    []Sample
	Dispatches []Dispatch
	Final      Final
	// KeepAliveBound is the virtual time within which a node must close the
	// stream of a client that vanished.
	KeepAliveBound time.Duration
	// GoroutineBound returns the largest acceptable goroutine count for a
	// sample, from its connection count and the pool maximum. Nil: unchecked.
	GoroutineBound func(s Sample) int
}

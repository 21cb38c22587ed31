package system

import (
	"context"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Point names a boundary crossing of a node: an operation that is about to
// happen. Key identifies the logical operation; it is unique among the
// operations of one node that can be pending at the same time.
type Point struct {
	Node string
	Kind string // one of the Point* constants
	Key  string
	// Msg is the message the operation works for (the task gates of a
	// message's dispatch); zero for operations of no message.
	Msg Message
}

// Kinds of Point.
const (
	PointTask         = "task"          // an executor task is about to run on a worker
	PointTaskCaller   = "task.caller"   // an executor task is about to run in its submitter (caller-runs: the pool is saturated)
	PointTaskDone     = "task.done"     // a worker finished a task and is about to take the next (never after a caller-runs task)
	PointSessionSend  = "session.send"  // a delivery is about to be written to a client stream
	PointSessionOpen  = "session.open"  // a session is about to be registered
	PointSessionClose = "session.close" // a session is about to be unregistered
	PointRefresh      = "refresh"       // a periodic refresh of routes and registry
	PointSessionLock  = "session.lock"  // an operation is about to take a session's lock
	// PointStreamDeliver: a relay stream's receiver read an item and
	// claimed it (its ack will cover it) and is about to deliver it. The
	// gate's ctx is the stream's: an embedder may break the stream here
	// (the model checker and the fault injector do), as a sender's next
	// write breaking or its watchdog firing would. Key is the item's
	// "link #linkseq".
	PointStreamDeliver = "stream.deliver"
)

// Hooks lets the program embedding a node observe and pace it at its
// boundaries. Production nodes use no hooks; the simulation parks operations
// in Gate to choose their order, and records Observe events in its trace.
type Hooks interface {
	// Gate is called just before the operation at p; it may block.
	Gate(ctx context.Context, p Point)
	// Observe receives facts the node established (see the Event types).
	Observe(e any)
}

// DispatchEvent is observed when a node fans a message out.
type DispatchEvent struct {
	Node  string
	Room  string
	Seq   uint64
	Mode  Mode
	Retry bool // fan-out of a retried (duplicate) send
	// Members is the membership read atomically with the seq.
	Members []string
	// Local are the members with a session on this node.
	Local []string
	// Routes maps non-local members to their server as the bulk MGET read
	// them ("" when unrouted). Empty in single mode, where each task reads its
	// own route.
	Routes map[string]string
	Tasks  int
}

// SessionEvent is observed when a session opens or closes.
type SessionEvent struct {
	Node   string
	User   string
	Open   bool
	Reason string // why it closed
}

// TaskEvent is observed when a task is submitted to the executor: where it
// went ("worker", "idle", "queue" or "caller").
type TaskEvent struct {
	Node      string
	Label     string
	Placement string
}

// RelayEvent is observed when a relay call returns to its sender.
type RelayEvent struct {
	Node       string
	Target     string
	Room       string
	Seq        uint64
	Recipients int
	// Mode is how this attempt relayed; Bulk is Mode != ModeSingle.
	Mode    Mode
	Bulk    bool
	Attempt int
	Err     error
}

// PanicEvent is observed when a task panicked: the executor recovered it
// (the worker carries on) and the node logged it. Value is the recovered
// value, formatted with %v.
type PanicEvent struct {
	Node  string
	Label string
	Value string
}

type noHooks struct{}

func (noHooks) Gate(context.Context, Point) {}
func (noHooks) Observe(any)                 {}

var _ Hooks = noHooks{}

type labelKey struct{}

// WithLabel names the logical operation a context belongs to. The node labels
// every operation it starts ("send r1 c17", "deliver r1#5 u3", ...); hooks
// and interceptors use the label to key Redis commands and RPCs, and the
// label travels to peers in the x-op metadata.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Label returns the operation label of ctx, or "".
func Label(ctx context.Context) string {
	s, _ := ctx.Value(labelKey{}).(string)
	return s
}

// Message names the message an operation works for, as data: its room and
// sequence number, whether the operation belongs to a retried dispatch,
// and its sender and client message id (which tell apart two messages
// Redis gave the same seq after it lost writes). Labels are for people; an
// embedder that needs to know which message an operation serves (a Redis
// command, a relay call, a task) reads Point.Msg or MessageOf.
type Message struct {
	Room       string
	Seq        uint64
	Retry      bool
	Sender, ID string
}

type messageKey struct{}

// WithMessage marks ctx as working for message m: the node marks a
// message's dispatch (its tasks, route look-ups and relay calls inherit
// it) and the relays of a stream's items it falls back or hands over.
func WithMessage(ctx context.Context, m Message) context.Context {
	return context.WithValue(ctx, messageKey{}, m)
}

// messageOf names a relayed message.
func messageOf(m *relaypb.RelayedMessage) Message {
	return Message{Room: m.GetRoom(), Seq: m.GetSeq(), Sender: m.GetSender(), ID: m.GetMsgId()}
}

// MessageOf returns the message ctx works for, if any.
func MessageOf(ctx context.Context) (Message, bool) {
	m, ok := ctx.Value(messageKey{}).(Message)
	return m, ok
}

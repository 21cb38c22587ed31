package system

import (
	"context"
	"fmt"
	"log"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
)

// Mode selects how a node relays a message to recipients on other nodes.
// Every RPC of the protocol version a node speaks exists in its build; the
// mode is a configuration flag, and caps what a sender uses with a peer.
type Mode string

const (
	// ModeSingle sends one RelayMessage per remote recipient (protocol v1).
	ModeSingle Mode = "single"
	// ModeBulk sends one RelayBulkMessage per destination server (v2).
	ModeBulk Mode = "bulk"
	// ModeStream writes one item per destination server on a long-lived
	// RelayStream per peer channel (v3).
	ModeStream Mode = "stream"
)

// Modes are the relay modes, from the oldest protocol to the newest.
var Modes = []Mode{ModeSingle, ModeBulk, ModeStream}

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeSingle, ModeBulk, ModeStream:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown relay mode %q (want single, bulk or stream)", s)
}

// Relay protocol versions: v1 has RelayMessage only, v2 adds
// RelayBulkMessage, v3 adds RelayStream.
const (
	ProtocolV1     = 1
	ProtocolV2     = 2
	ProtocolV3     = 3
	ProtocolLatest = ProtocolV3
)

// ParseProtocol reads a protocol version: "3" or "v3".
func ParseProtocol(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimPrefix(s, "v"))
	if err != nil || v < ProtocolV1 || v > ProtocolLatest {
		return 0, fmt.Errorf("unknown relay protocol %q (want v1, v2 or v3)", s)
	}
	return v, nil
}

// Protocol is the version a mode needs.
func (m Mode) Protocol() int {
	switch m {
	case ModeBulk:
		return ProtocolV2
	case ModeStream:
		return ProtocolV3
	}
	return ProtocolV1
}

// ModeFor is the mode a sender uses with a peer: the best that the
// configured mode allows and both ends speak.
func ModeFor(configured Mode, protocols ...int) Mode {
	v := configured.Protocol()
	for _, p := range protocols {
		v = min(v, p)
	}
	return Modes[max(v, ProtocolV1)-1]
}

// Config is a node's behaviour. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	NodeID string
	// Advertise is the address peers dial to reach this node.
	Advertise string
	Mode      Mode
	// Protocol is the highest relay protocol version the node speaks and
	// advertises (an older build's behaviour: a v1 node answers
	// Unimplemented to bulk and stream relays, and relays in single mode
	// whatever Mode says). 0 means the latest.
	Protocol int
	Executor ExecutorConfig
	// ClusterToken authenticates node-to-node relay calls.
	ClusterToken string
	// UserSecret, when set, makes every Chat call prove the user it acts
	// for: its x-user-token metadata must be UserToken(UserSecret, user)
	// (auth.go). Empty: clients are not authenticated.
	UserSecret string
	// ChannelsPerPeer is the number of independent gRPC connections kept to
	// each peer (seed grpc-threads-vs-channels).
	ChannelsPerPeer int
	// RouteTTL bounds how long a user's routing entry outlives its node;
	// entries are refreshed every RouteTTL/3 while the user is connected.
	RouteTTL    time.Duration
	RegistryTTL time.Duration
	IdemTTL     time.Duration
	MaxPayload  int
	// MaxRecipients bounds a bulk relay's recipient list.
	MaxRecipients int
	RelayTimeout  time.Duration
	RelayAttempts int
	RelayBackoff  time.Duration
	// StreamBatch is the number of items a relay stream carries before the
	// sender closes it for the cumulative ack and opens the next one;
	// StreamLinger closes a stream that has been open that long. Together
	// they bound what a sender must hold for resending.
	StreamBatch  int
	StreamLinger time.Duration
	// StreamQueue bounds the items waiting for one peer channel's stream;
	// a relay beyond it is dropped (its recipients catch up from the log).
	StreamQueue int
	// StreamBacklog bounds what one peer channel's link holds: queued
	// plus written-but-unacknowledged items. A relay beyond it is dropped
	// at once, without a retry (its recipients catch up from the log):
	// the link's memory, and what each new stream rewrites, never grow
	// with the messages sent while the peer does not acknowledge.
	StreamBacklog int
	// OutboxSize bounds the deliveries queued for one client; a client that
	// falls further behind is disconnected and catches up from its cursor.
	OutboxSize int
	// ReplayPage bounds the room-log entries a replay, catch-up or gap
	// fill reads from Redis at once: it reads the log a page at a time and
	// pushes each page before it reads the next, so what it holds is the
	// outbox plus one page, whatever the length of the backlog.
	ReplayPage int
	// StreamKeepAlive and StreamKeepAliveTimeout make the server ping idle
	// transports, so a client that vanished without closing its stream is
	// noticed and its stream closed.
	StreamKeepAlive        time.Duration
	StreamKeepAliveTimeout time.Duration
	// RedisPoolSize is go-redis' pool size, set explicitly and high.
	RedisPoolSize int
	// CatchUpInterval is how often a session re-reads its rooms' logs to
	// make good any live push that never arrived.
	CatchUpInterval time.Duration
	// SlowClientAfter bounds a replay's or catch-up's wait on one client:
	// a push waits at most this long for room in the client's outbox
	// before the session ends as too slow (ResourceExhausted: the client
	// reconnects and resumes from its cursor).
	SlowClientAfter time.Duration
	// LiveLockWait bounds a live delivery's wait (an executor task, a
	// relay call or a stream item) for a session's lock; LivePushWait its
	// wait for room in the outbox, under the lock. A replay or catch-up
	// push that has waited LivePushWait for room marks the session as
	// waiting for its client: live deliveries then do not wait for the
	// lock at all. What a live delivery cannot deliver within them it
	// leaves to the session's catch-up, woken at once: it never parks a
	// worker or a handler behind a client that stopped reading.
	// LiveLockWait: well under a client call's deadline, above a healthy
	// lock hold; LivePushWait: well above the time a reading client takes
	// per delivery, well under the live delivery bound.
	LiveLockWait time.Duration
	LivePushWait time.Duration
	// Logf logs what the node must report but cannot return to a caller
	// (a task that panicked). Nil means log.Printf.
	Logf func(format string, args ...any)
	// Legacy brings back behaviours of older builds, for a rolling
	// upgrade. Off by default.
	Legacy Legacy
}

// Legacy selects, one by one, the behaviours of builds before the fixes
// whose change is visible to other nodes, to clients or in Redis without a
// relay protocol version bump, so that fixed and unfixed nodes can run
// side by side while a cluster is upgraded (docs/protocol-rules.md). A
// node with every flag set behaves as the unfixed build did. All off is
// the fixed behaviour and the default.
type Legacy struct {
	// Names: a name is checked as before (any byte above 0x7f accepted,
	// valid UTF-8 or not), and a relay call's operation label (x-op
	// metadata) is sent raw, so a relay of a message whose room or
	// recipient is named outside printable ASCII fails in the sender's
	// gRPC client (Internal, not retried) and its recipients get it from
	// the catch-up only. Received labels are taken raw too.
	Names bool
	// Idempotency: a send's idempotency key is scoped to its room only: a
	// send that reuses a message id already sequenced in the room is a
	// duplicate whoever sends it, is not checked for membership, and is
	// fanned out with the retry's sender and payload under the original
	// seq.
	Idempotency bool
	// Deregister: a stopping node reads its registry entry and then
	// deletes it, in two commands: a new incarnation that registered in
	// between loses its entry.
	Deregister bool
}

// legacyFlags name Legacy's fields for ParseLegacy and String.
var legacyFlags = []struct {
	name string
	set  func(*Legacy) *bool
}{
	{"names", func(l *Legacy) *bool { return &l.Names }},
	{"idempotency", func(l *Legacy) *bool { return &l.Idempotency }},
	{"deregister", func(l *Legacy) *bool { return &l.Deregister }},
}

// ParseLegacy reads a comma-separated list of legacy behaviours ("names",
// "idempotency", "deregister", or "all"); "" or "none" is none.
func ParseLegacy(s string) (Legacy, error) {
	var l Legacy
	if s == "" || s == "none" {
		return l, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		found := false
		for _, f := range legacyFlags {
			if part == f.name || part == "all" {
				*f.set(&l) = true
				found = true
			}
		}
		if !found {
			return Legacy{}, fmt.Errorf("unknown legacy behaviour %q (want names, idempotency, deregister or all)", part)
		}
	}
	return l, nil
}

// String lists the legacy behaviours set, as ParseLegacy reads them.
func (l Legacy) String() string {
	var on []string
	for _, f := range legacyFlags {
		if *f.set(&l) {
			on = append(on, f.name)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}

// DefaultConfig returns the seeds' configuration.
func DefaultConfig() Config {
	return Config{
		Mode:                   ModeBulk,
		Executor:               ExecutorConfig{Core: 30, Max: 200, Queue: 1000, KeepAlive: 60 * time.Second},
		ChannelsPerPeer:        1,
		RouteTTL:               30 * time.Second,
		RegistryTTL:            30 * time.Second,
		IdemTTL:                24 * time.Hour,
		MaxPayload:             4096,
		MaxRecipients:          1000,
		RelayTimeout:           2 * time.Second,
		RelayAttempts:          3,
		RelayBackoff:           100 * time.Millisecond,
		StreamBatch:            64,
		StreamLinger:           500 * time.Millisecond,
		StreamQueue:            4096,
		StreamBacklog:          4096,
		OutboxSize:             1024,
		ReplayPage:             128,
		StreamKeepAlive:        10 * time.Second,
		StreamKeepAliveTimeout: 5 * time.Second,
		RedisPoolSize:          256,
		CatchUpInterval:        5 * time.Second,
		SlowClientAfter:        5 * time.Second,
		LiveLockWait:           250 * time.Millisecond,
		LivePushWait:           20 * time.Millisecond,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.Executor.Core == 0 && c.Executor.Max == 0 {
		c.Executor.Core, c.Executor.Max = d.Executor.Core, d.Executor.Max
		if c.Executor.Queue == 0 {
			c.Executor.Queue = d.Executor.Queue
		}
	}
	if c.Executor.KeepAlive == 0 {
		c.Executor.KeepAlive = d.Executor.KeepAlive
	}
	setDefault(&c.ChannelsPerPeer, d.ChannelsPerPeer)
	setDefault(&c.RouteTTL, d.RouteTTL)
	setDefault(&c.RegistryTTL, d.RegistryTTL)
	setDefault(&c.IdemTTL, d.IdemTTL)
	setDefault(&c.MaxPayload, d.MaxPayload)
	setDefault(&c.MaxRecipients, d.MaxRecipients)
	setDefault(&c.RelayTimeout, d.RelayTimeout)
	setDefault(&c.RelayAttempts, d.RelayAttempts)
	setDefault(&c.RelayBackoff, d.RelayBackoff)
	setDefault(&c.OutboxSize, d.OutboxSize)
	setDefault(&c.ReplayPage, d.ReplayPage)
	setDefault(&c.Protocol, ProtocolLatest)
	setDefault(&c.StreamBatch, d.StreamBatch)
	setDefault(&c.StreamLinger, d.StreamLinger)
	setDefault(&c.StreamQueue, d.StreamQueue)
	setDefault(&c.StreamBacklog, d.StreamBacklog)
	setDefault(&c.StreamKeepAlive, d.StreamKeepAlive)
	setDefault(&c.StreamKeepAliveTimeout, d.StreamKeepAliveTimeout)
	setDefault(&c.RedisPoolSize, d.RedisPoolSize)
	setDefault(&c.CatchUpInterval, d.CatchUpInterval)
	setDefault(&c.SlowClientAfter, d.SlowClientAfter)
	setDefault(&c.LiveLockWait, d.LiveLockWait)
	setDefault(&c.LivePushWait, d.LivePushWait)
	if c.Logf == nil {
		c.Logf = log.Printf
	}
	return c
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// MaxNodeIDLen bounds a node id, in bytes.
const MaxNodeIDLen = 64

// ValidNodeID is the rule for node ids: 1 to MaxNodeIDLen bytes of valid
// UTF-8, every rune a letter or digit of any script, '-', '_' or '.'. A
// node id is cut out of a route value ("node@session") at its first '@',
// is part of Redis keys, whose separator is ':', and is written in logs
// and labels: a node whose id holds anything else would start, but its
// users' routes would name another node, or none.
func ValidNodeID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("node id is required")
	case len(id) > MaxNodeIDLen:
		return fmt.Errorf("node id %q is longer than %d bytes", id, MaxNodeIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("node id %q is not valid UTF-8", id)
	}
	for _, r := range id {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != '.' {
			return fmt.Errorf("node id %q: %q is not allowed (letters, digits, '-', '_' and '.' only)", id, r)
		}
	}
	return nil
}

func (c Config) validate() error {
	if err := ValidNodeID(c.NodeID); err != nil {
		return err
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Protocol < ProtocolV1 || c.Protocol > ProtocolLatest {
		return fmt.Errorf("node %s: unknown relay protocol v%d (want v1 to v%d)", c.NodeID, c.Protocol, ProtocolLatest)
	}
	if c.Advertise == "" {
		return fmt.Errorf("node %s: advertise address is required", c.NodeID)
	}
	if c.ClusterToken == "" {
		return fmt.Errorf("node %s: cluster token is required", c.NodeID)
	}
	e := c.Executor
	if e.Core < 0 || e.Max < 1 || e.Core > e.Max || e.Queue < 0 {
		return fmt.Errorf("node %s: bad executor sizes core=%d max=%d queue=%d", c.NodeID, e.Core, e.Max, e.Queue)
	}
	if c.ReplayPage < 1 {
		return fmt.Errorf("node %s: replay page %d: want at least 1 entry", c.NodeID, c.ReplayPage)
	}
	return nil
}

// Deps are the injection points through which a node reaches the world. In
// production they are TCP and a real Redis; in the simulation, bufconn and
// miniredis.
type Deps struct {
	// Listener is where the node serves gRPC.
	Listener net.Listener
	// Dial connects to a peer address; nil dials TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Redis are the go-redis options (Addr, Dialer, ...). The node sets
	// PoolSize when it is zero.
	Redis *redis.Options
	// RedisHooks are added to the node's Redis client.
	RedisHooks []redis.Hook
	// ServerOptions and DialOptions are appended to the node's own.
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	// TargetScheme is the gRPC resolver scheme for peer addresses
	// ("passthrough" avoids DNS); default "passthrough".
	TargetScheme string
	Hooks        Hooks
	// Probes, when set, is told each code probe the node hits
	// (probes.go); nil costs nothing. Unlike Hooks it is never asked to
	// pace the node: a probe changes nothing the node does.
	Probes Prober
}

package system

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
)

// Mode selects how a node relays a message to recipients on other nodes. Both
// RPCs exist in every build; the mode is a configuration flag.
type Mode string

const (
	// ModeSingle sends one RelayMessage per remote recipient.
	ModeSingle Mode = "single"
	// ModeBulk sends one RelayBulkMessage per destination server.
	ModeBulk Mode = "bulk"
)

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeSingle, ModeBulk:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown relay mode %q (want single or bulk)", s)
}

// Config is a node's behaviour. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	NodeID string
	// Advertise is the address peers dial to reach this node.
	Advertise string
	Mode      Mode
	Executor  ExecutorConfig
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
	// OutboxSize bounds the deliveries queued for one client; a client that
	// falls further behind is disconnected and catches up from its cursor.
	OutboxSize int
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
	// Logf logs what the node must report but cannot return to a caller
	// (a task that panicked). Nil means log.Printf.
	Logf func(format string, args ...any)
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
		OutboxSize:             1024,
		StreamKeepAlive:        10 * time.Second,
		StreamKeepAliveTimeout: 5 * time.Second,
		RedisPoolSize:          256,
		CatchUpInterval:        5 * time.Second,
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
	setDefault(&c.StreamKeepAlive, d.StreamKeepAlive)
	setDefault(&c.StreamKeepAliveTimeout, d.StreamKeepAliveTimeout)
	setDefault(&c.RedisPoolSize, d.RedisPoolSize)
	setDefault(&c.CatchUpInterval, d.CatchUpInterval)
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

func (c Config) validate() error {
	if c.NodeID == "" {
		return fmt.Errorf("node id is required")
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
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
}

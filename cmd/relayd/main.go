// Command relayd runs one relay node for real: gRPC over TCP, state in a real
// Redis. Several relayd processes sharing one Redis and one cluster token
// form a cluster.
//
//	relayd -node n1 -listen 127.0.0.1:7001 -redis 127.0.0.1:6379 -token s3cret -user-secret u53rs -mode bulk
//
// With -user-secret, clients must prove who they are: every Chat call
// carries x-user-token metadata, the hex HMAC-SHA256 of the user id keyed
// with the secret (system.UserToken), for the user its request names
// (CreateRoom: the user in x-user metadata). Without it, any client may
// act as any user.
//
// Every flag has an environment fallback (RELAYD_NODE, RELAYD_LISTEN, ...);
// a flag given on the command line wins. SIGINT or SIGTERM stops the node
// gracefully: client streams are closed, the node leaves the registry, and
// in-flight calls and tasks finish before the process exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/system"
)

// stopTimeout bounds a graceful stop; then connections are cut.
const stopTimeout = 15 * time.Second

func main() {
	os.Exit(relayd(os.Args[1:], os.Getenv, os.Stderr))
}

// relayd is main with its inputs injected; it returns the exit code: 0 after
// a graceful stop, 1 when the node fails, 2 on bad flags.
func relayd(args []string, getenv func(string) string, stderr io.Writer) int {
	opts, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := log.New(stderr, "relayd: ", log.LstdFlags)
	if err := run(ctx, opts, logger); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// options are relayd's settings.
type options struct {
	listen    string
	advertise string // "" means the listen address
	redis     string
	node      string
	mode      system.Mode
	protocol  int
	core      int
	max       int
	queue     int
	token     string
	// userSecret keys the users' credentials ("": clients are not
	// authenticated).
	userSecret string
	channels   int
	// takeover starts the node even when its id's registry entry is live.
	takeover bool
	probes   string // -probes: the file the code probes hit are added to
	// peerAddrs rewrites peer addresses before dialling (advertised ->
	// dialled), e.g. to reach a peer through a proxy.
	peerAddrs map[string]string
	// legacy: behaviours of older builds, for a rolling upgrade
	// (docs/protocol-rules.md).
	legacy system.Legacy
}

// parseFlags reads args, falling back to the RELAYD_* environment for flags
// not given. On an error it writes the error and the usage to stderr.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	var mode, protocol, legacy string
	fs := flag.NewFlagSet("relayd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: relayd -node ID -token SECRET [flags]\n\n"+
			"Runs one relay node. Each flag falls back to the environment variable named\n"+
			"in brackets; a flag on the command line wins.\n\n"+
			"With -user-secret, every client call must carry the metadata\n"+
			"x-user-token: hex(HMAC-SHA256(key=secret, message=user id)) for the user\n"+
			"its request names (CreateRoom: the user named in x-user metadata), e.g.\n"+
			"  printf %%s alice | openssl dgst -sha256 -hmac \"$SECRET\"\n\n")
		fs.PrintDefaults()
	}
	def := system.DefaultConfig()
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7000", "TCP address to serve gRPC on [RELAYD_LISTEN]")
	fs.StringVar(&o.advertise, "advertise", "", "address peers dial to reach this node (default: the listen address) [RELAYD_ADVERTISE]")
	fs.StringVar(&o.redis, "redis", "127.0.0.1:6379", "Redis address [RELAYD_REDIS]")
	fs.StringVar(&o.node, "node", "", "node id, unique in the cluster (required) [RELAYD_NODE]")
	fs.StringVar(&mode, "mode", string(def.Mode), "relay mode: single, bulk or stream; a peer that speaks an older protocol gets the best mode both speak [RELAYD_MODE]")
	fs.StringVar(&protocol, "protocol", fmt.Sprintf("v%d", system.ProtocolLatest), "relay protocol version this node speaks and advertises: v1 (single only), v2 (adds bulk) or v3 (adds stream); an older version runs the node as an older build would [RELAYD_PROTOCOL]")
	fs.IntVar(&o.core, "core", def.Executor.Core, "executor core workers [RELAYD_CORE]")
	fs.IntVar(&o.max, "max", def.Executor.Max, "executor max workers [RELAYD_MAX]")
	fs.IntVar(&o.queue, "queue", def.Executor.Queue, "executor queue capacity [RELAYD_QUEUE]")
	fs.StringVar(&o.token, "token", "", "cluster token that authenticates node-to-node calls (required) [RELAYD_TOKEN]")
	fs.StringVar(&o.userSecret, "user-secret", "", "secret keying the users' credentials; empty: clients are not authenticated [RELAYD_USER_SECRET]")
	fs.IntVar(&o.channels, "channels", def.ChannelsPerPeer, "gRPC connections kept to each peer [RELAYD_CHANNELS]")
	fs.StringVar(&o.probes, "probes", "", "count the code probes the node hits (docs/probes.md) and add them, at a graceful exit, to the JSON object in this file [RELAYD_PROBES]")
	fs.BoolVar(&o.takeover, "takeover", false, "start even when the node id is held by a live process (its registry entry's heartbeat is fresh); without it such a start is refused [RELAYD_TAKEOVER]")
	var peerAddrs string
	fs.StringVar(&peerAddrs, "peer-addr", "", "dial a peer advertised at ADDR through VIA instead: ADDR=VIA[,ADDR=VIA...] (e.g. through a proxy) [RELAYD_PEER_ADDR]")
	fs.StringVar(&legacy, "legacy", "", "behaviours of builds before the protocol-rule fixes, for a rolling upgrade (docs/protocol-rules.md): a comma-separated list of names, idempotency, deregister, or all [RELAYD_LEGACY]")

	fail := func(err error) (options, error) {
		fmt.Fprintf(stderr, "relayd: %v\n", err)
		fs.Usage()
		return options{}, err
	}
	if err := applyEnv(fs, getenv); err != nil {
		return fail(err)
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err // flag has printed the error and the usage
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	m, err := system.ParseMode(mode)
	if err != nil {
		return fail(err)
	}
	o.mode = m
	if o.protocol, err = system.ParseProtocol(protocol); err != nil {
		return fail(err)
	}
	if o.peerAddrs, err = parsePeerAddrs(peerAddrs); err != nil {
		return fail(err)
	}
	if o.legacy, err = system.ParseLegacy(legacy); err != nil {
		return fail(err)
	}
	if err := o.validate(); err != nil {
		return fail(err)
	}
	return o, nil
}

// applyEnv sets each flag from RELAYD_<NAME> when that is set, before the
// command line is parsed, so that the command line wins.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "RELAYD_" + envName(f.Name)
		v := getenv(name)
		if v == "" || err != nil {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s=%q: %w", name, v, e)
		}
	})
	return err
}

func envName(flagName string) string {
	b := []byte(flagName)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-':
			b[i] = '_'
		}
	}
	return string(b)
}

func (o options) validate() error {
	switch {
	case o.node == "":
		return errors.New("-node is required")
	case system.ValidNodeID(o.node) != nil:
		return fmt.Errorf("-node: %v", system.ValidNodeID(o.node))
	case o.token == "":
		return errors.New("-token is required")
	case o.listen == "":
		return errors.New("-listen is required")
	case o.redis == "":
		return errors.New("-redis is required")
	case o.core < 0 || o.max < 1 || o.core > o.max || o.queue < 0:
		return fmt.Errorf("bad executor sizes -core %d -max %d -queue %d (want 0 <= core <= max, max >= 1, queue >= 0)", o.core, o.max, o.queue)
	case o.channels < 1:
		return fmt.Errorf("-channels %d: want at least 1", o.channels)
	}
	return nil
}

// run serves one node until ctx ends, then stops it gracefully.
func run(ctx context.Context, o options, logger *log.Logger) error {
	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	cfg := system.Config{
		NodeID:          o.node,
		Advertise:       advertiseAddr(o, lis.Addr()),
		Mode:            o.mode,
		Protocol:        o.protocol,
		Executor:        system.ExecutorConfig{Core: o.core, Max: o.max, Queue: o.queue},
		ClusterToken:    o.token,
		UserSecret:      o.userSecret,
		ChannelsPerPeer: o.channels,
		Legacy:          o.legacy,
	}
	deps := system.Deps{Listener: lis, Redis: &redis.Options{Addr: o.redis}, Dial: peerDialer(o.peerAddrs)}
	var probes *probeFile
	if o.probes != "" {
		probes = &probeFile{path: o.probes, hits: map[string]int{}}
		deps.Probes = probes
	}
	node, err := system.New(cfg, deps)
	if err != nil {
		lis.Close()
		return err
	}
	if err := claimIdentity(ctx, node, o, logger); err != nil {
		node.Kill()
		lis.Close()
		return err
	}
	if err := node.Start(ctx); err != nil {
		node.Kill() // releases the Redis client and the executor
		lis.Close()
		return err
	}
	logger.Printf("node %s serving on %s (advertised as %s), mode %s, protocol v%d, epoch %d",
		o.node, lis.Addr(), cfg.Advertise, node.Mode(), node.Protocol(), node.Epoch())
	if note := modeNote(o, node.Mode(), node.Protocol()); note != "" {
		logger.Print(note)
	}
	if o.userSecret == "" {
		logger.Printf("node %s: no -user-secret: clients are not authenticated (any client may act as any user)", o.node)
	}
	<-ctx.Done()
	logger.Printf("node %s stopping", o.node)
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	node.Stop(stopCtx)
	logger.Printf("node %s stopped", o.node)
	if probes != nil {
		if err := probes.write(); err != nil {
			return fmt.Errorf("-probes: %w", err)
		}
	}
	return nil
}

// modeNote says, when the protocol a node speaks caps the mode it was
// given (a v1 node relays in single mode whatever -mode says), which mode
// it really runs; "" when it runs the one it was given.
func modeNote(o options, running system.Mode, protocol int) string {
	if running == o.mode {
		return ""
	}
	return fmt.Sprintf("node %s: -mode %s needs protocol v%d, this node speaks v%d: it relays in %s mode", o.node, o.mode, o.mode.Protocol(), protocol, running)
}

// advertiseAddr is -advertise, or else the listen address, with the actual
// port when the listen port was 0.
func advertiseAddr(o options, actual net.Addr) string {
	if o.advertise != "" {
		return o.advertise
	}
	host, port, err := net.SplitHostPort(o.listen)
	if err != nil || port != "0" {
		return o.listen
	}
	if tcp, ok := actual.(*net.TCPAddr); ok {
		return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
	}
	return actual.String()
}

package system

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// peers holds client connections to other nodes keyed by (server, epoch):
// a peer that restarted (new epoch) gets new connections and the old ones
// are closed. Each peer has ChannelsPerPeer independent connections.
type peers struct {
	n  *Node
	mu sync.Mutex // never held across a Redis call or a dial
	m  map[string]*peer
	// closed is set by closeAll: a relay still running on a stopped node
	// (a caller-runs task in a handler that outlived the server) must not
	// open connections nobody will close.
	closed bool
	// writers are the stream links' writer goroutines (stream.go); gen
	// numbers the peers installed, for their links' names.
	writers sync.WaitGroup
	gen     uint64
}

type peer struct {
	server string
	epoch  uint64
	// incarnation is the process the registry entry named (NodeInfo).
	incarnation string
	// protocol is the version the peer advertised; spoken caps it once the
	// peer answered Unimplemented (until its epoch changes: a new peer).
	protocol int
	spoken   atomic.Int32
	// conns and links are filled before the peer is published and never
	// changed after: relays holding the peer read them without a lock while
	// it is closed.
	conns  []*grpc.ClientConn
	links  []*link
	closed atomic.Bool
	// read is when the peer's registry entry was last read (UnixNano):
	// get reads it again once it is older than the registry's refresh
	// interval, so a version the peer's previous incarnation advertised
	// never outlives that interval on an idle link.
	read atomic.Int64
}

// replacedBy says whether info names a newer process than p's, and
// whether that order disagrees with the epochs' (Redis lost an epoch's
// increment). Two entries that both name their process are ordered by its
// start time, as the heartbeat script orders them; otherwise (an entry an
// older build wrote) by epoch.
func (p *peer) replacedBy(info NodeInfo) (newer, rewound bool) {
	byEpoch := info.Epoch > p.epoch
	c := compareIncarnations(info.Incarnation, p.incarnation)
	if c == 0 {
		return byEpoch, false
	}
	return c > 0, (c > 0) != byEpoch
}

// compareIncarnations orders two processes by their incarnations
// (Node.incarnation: start times in base 36) as heartbeatScript does: a
// longer one is later, else the string order is the time order. 0 when
// either is unknown ("") or they are the same.
func compareIncarnations(a, b string) int {
	if a == "" || b == "" || a == b {
		return 0
	}
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(a, b)
}

// speaks is the best protocol version the peer is known to speak.
func (p *peer) speaks() int { return min(p.protocol, int(p.spoken.Load())) }

// downgrade records that the peer answered Unimplemented to a call of a
// version above v, and reports whether that lowered what it speaks.
func (p *peer) downgrade(v int) bool {
	for {
		cur := p.spoken.Load()
		if int(cur) <= v {
			return false
		}
		if p.spoken.CompareAndSwap(cur, int32(v)) {
			return true
		}
	}
}

func newPeers(n *Node) *peers { return &peers{n: n, m: map[string]*peer{}} }

// get returns the connections to server, reading the registry on a miss.
// A server missing from the registry is ErrUnknownNode; a failed read of the
// registry is Unavailable: both are retried.
//
// A peer whose entry was read longer ago than the registry's refresh
// interval (the heartbeat period, min(RouteTTL, RegistryTTL)/3) is read
// again first: a peer that restarted with another protocol version while
// no relay went to it (no failure told us) is relayed to in the mode its
// new incarnation speaks. A failed re-read keeps the known peer.
func (ps *peers) get(ctx context.Context, server string) (*peer, error) {
	ps.mu.Lock()
	p := ps.m[server]
	ps.mu.Unlock()
	if p != nil && time.Since(time.Unix(0, p.read.Load())) < ps.refreshEvery() {
		return p, nil
	}
	info, err := ps.n.dir.LookupNode(ctx, server)
	switch {
	case p != nil && err != nil:
		ps.n.probe(ProbePeerRereadFailed)
		return p, nil
	case errors.Is(err, ErrUnknownNode):
		return nil, err
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "registry: %v", err)
	}
	return ps.install(info)
}

// refreshEvery is how long a peer's registry entry is trusted: the
// heartbeat period.
func (ps *peers) refreshEvery() time.Duration {
	return min(ps.n.cfg.RouteTTL, ps.n.cfg.RegistryTTL) / 3
}

// install makes info the peer's current incarnation. The one installed
// stays unless info names a newer process (a slow reader of the registry
// must not replace a restarted peer's connections with its
// predecessor's): a later-started one when both entries name their
// process, else a newer epoch. Epochs alone cannot tell: after Redis lost
// writes (a restore from an older snapshot, a failover to a replica that
// missed them) a restarted peer may be issued the epoch its predecessor
// had, or a lower one, and a peer kept by epoch would then be its dead
// predecessor's, with its protocol version, for as long as the new
// process lives. The replaced connections are closed outside the lock:
// relays still using them fail with Canceled and are retried on the new
// ones.
func (ps *peers) install(info NodeInfo) (*peer, error) {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil, errNodeStopping
	}
	if p := ps.m[info.ID]; p != nil {
		newer, rewound := p.replacedBy(info)
		if !newer {
			ps.mu.Unlock()
			if p.epoch > info.Epoch || rewound {
				ps.n.probe(ProbePeerKeptNewer)
			}
			p.read.Store(time.Now().UnixNano())
			return p, nil
		}
		if rewound {
			ps.n.probe(ProbePeerNewerAtRewoundEpoch)
		}
	}
	p := &peer{server: info.ID, epoch: info.Epoch, incarnation: info.Incarnation, protocol: info.Protocol}
	p.spoken.Store(ProtocolLatest)
	p.read.Store(time.Now().UnixNano())
	ps.gen++
	for i := range ps.n.cfg.ChannelsPerPeer {
		p.links = append(p.links, newLink(ps.n, p, ps.gen, i))
		cc, err := ps.n.dialPeer(info.Addr) // grpc.NewClient: no I/O
		if err != nil {
			ps.mu.Unlock()
			p.close()
			return nil, err
		}
		p.conns = append(p.conns, cc)
	}
	old := ps.m[info.ID]
	ps.m[info.ID] = p
	ps.mu.Unlock()
	if old != nil {
		ps.n.probe(ProbePeerReplaced)
		old.close()
	}
	return p, nil
}

// refresh re-reads server's registry entry after a transport failure on the
// connections to its incarnation epoch, and switches to new connections if
// the peer restarted with a new epoch; the old connections may be in
// reconnect back-off for a long while. A peer missing from the registry is
// forgotten, if epoch is still the current entry.
func (ps *peers) refresh(ctx context.Context, server string, epoch uint64) {
	info, err := ps.n.dir.LookupNode(ctx, server)
	switch {
	case errors.Is(err, ErrUnknownNode):
		ps.forget(server, epoch)
	case err == nil:
		_, _ = ps.install(info)
	}
}

// forget drops the connections to server's incarnation epoch so the next
// relay re-reads the registry. Only that incarnation: a relay that failed on
// an old one must not close the connections another relay has installed to
// a newer one meanwhile (relays in flight on them would be cut).
func (ps *peers) forget(server string, epoch uint64) {
	ps.mu.Lock()
	p := ps.m[server]
	if p == nil || p.epoch != epoch {
		ps.mu.Unlock()
		if p != nil && p.epoch > epoch {
			ps.n.probe(ProbePeerForgetSpared)
		}
		return
	}
	delete(ps.m, server)
	ps.mu.Unlock()
	p.close()
}

// closeAll closes every peer's connections and links, and waits for the
// links' writers; nothing is installed after it.
func (ps *peers) closeAll() {
	ps.mu.Lock()
	ps.closed = true
	servers := make([]string, 0, len(ps.m))
	for s := range ps.m {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	all := make([]*peer, len(servers))
	for i, s := range servers {
		all[i] = ps.m[s]
		delete(ps.m, s)
	}
	ps.mu.Unlock()
	for _, p := range all {
		p.close()
	}
	ps.writers.Wait()
}

// counts returns the number of peers and of open connections to them.
func (ps *peers) counts() (live, conns int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.m {
		live++
		conns += len(p.conns)
	}
	return live, conns
}

// maxBacklog is the largest backlog of any current peer's links.
func (ps *peers) maxBacklog() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	most := 0
	for _, p := range ps.m {
		for _, l := range p.links {
			most = max(most, l.backlog())
		}
	}
	return most
}

// conn picks one of the peer's channels from the message identity, so the
// choice does not depend on the order in which tasks happen to run. A closed
// peer (replaced or forgotten since the relay got it) offers none: nil. A
// connection picked just before the peer closes fails its call with
// Canceled, which is retried too.
func (p *peer) conn(room string, seq uint64, first string) *grpc.ClientConn {
	if p.closed.Load() || len(p.conns) == 0 {
		return nil
	}
	if len(p.conns) == 1 {
		return p.conns[0]
	}
	h := fnv.New32a()
	h.Write([]byte(room + "#" + strconv.FormatUint(seq, 10) + "#" + first))
	return p.conns[int(h.Sum32()%uint32(len(p.conns)))]
}

// channel is the peer's i-th connection, or nil once the peer is closed.
func (p *peer) channel(i int) *grpc.ClientConn {
	if p.closed.Load() || i >= len(p.conns) {
		return nil
	}
	return p.conns[i]
}

// close closes the peer's connections, once. It leaves conns alone: relays
// holding the peer may be reading it.
func (p *peer) close() {
	if p.closed.Swap(true) {
		return
	}
	for _, l := range p.links {
		l.close()
	}
	for _, cc := range p.conns {
		_ = cc.Close()
	}
}

func (n *Node) dialPeer(addr string) (*grpc.ClientConn, error) {
	scheme := n.deps.TargetScheme
	if scheme == "" {
		scheme = "passthrough"
	}
	dial := n.dialer()
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
	}
	return grpc.NewClient(scheme+":///"+addr, append(opts, n.deps.DialOptions...)...)
}

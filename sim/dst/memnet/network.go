package memnet

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// Network is the simulated network: one in-memory listener per address
// (pipe.go: bufconn's semantics, memory as used), connections tagged with
// who dialled them, one-way cuts between addresses, and connections that
// can "vanish" (stop reading without closing).
type Network struct {
	mu        sync.Mutex
	listeners map[string]*Listener
	conns     map[*simConn]struct{}
	cut       map[[2]string]bool // one-way link from -> to is cut
	dead      map[string]bool    // dialers (incarnation tags) that crashed
	dials     uint64             // connections made, numbering them
}

// NewNetwork returns an empty network.
func NewNetwork() *Network {
	return &Network{listeners: map[string]*Listener{}, conns: map[*simConn]struct{}{}, cut: map[[2]string]bool{}}
}

const bufSize = 256 << 10

// Listen (re)creates the listener of addr; a restarted node listens anew.
func (nw *Network) Listen(addr string) net.Listener {
	l := listenMem(bufSize)
	nw.mu.Lock()
	nw.listeners[addr] = l
	nw.mu.Unlock()
	return l
}

// Dialer returns a dial function for connections made by from.
func (nw *Network) Dialer(from string) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		nw.mu.Lock()
		l, dead := nw.listeners[addr], nw.dead[from]
		nw.mu.Unlock()
		if dead {
			return nil, fmt.Errorf("dial %s: %s crashed", addr, from)
		}
		if l == nil {
			return nil, fmt.Errorf("dial %s: no such host", addr)
		}
		c, err := l.DialContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		sc := &simConn{Conn: c, nw: nw, from: from, to: addr, gone: make(chan struct{})}
		nw.mu.Lock()
		nw.dials++
		sc.id = nw.dials
		nw.conns[sc] = struct{}{}
		nw.mu.Unlock()
		return sc, nil
	}
}

// Cut cuts the one-way link from -> to; Heal restores every link.
func (nw *Network) Cut(from, to string) {
	nw.mu.Lock()
	nw.cut[[2]string{from, to}] = true
	nw.mu.Unlock()
}

// Uncut restores the one-way link from -> to.
func (nw *Network) Uncut(from, to string) {
	nw.mu.Lock()
	delete(nw.cut, [2]string{from, to})
	nw.mu.Unlock()
}

// Heal restores every link.
func (nw *Network) Heal() {
	nw.mu.Lock()
	nw.cut = map[[2]string]bool{}
	nw.mu.Unlock()
}

// Blocked reports whether from -> to is cut.
func (nw *Network) Blocked(from, to string) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.cut[[2]string{from, to}]
}

// Open counts open connections; with from != "" only those dialled by from,
// with toPrefix != "" only those to addresses with that prefix.
func (nw *Network) Open(from, toPrefix string) int {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	n := 0
	for c := range nw.conns {
		if (from == "" || c.from == from) && strings.HasPrefix(c.to, toPrefix) {
			n++
		}
	}
	return n
}

// OpenTo counts open connections to addr.
func (nw *Network) OpenTo(addr string) int {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	n := 0
	for c := range nw.conns {
		if c.to == addr {
			n++
		}
	}
	return n
}

// simConn is a client-side connection. Vanish makes it a black hole: writes
// are swallowed and reads block until Close, as when a client's machine
// disappears without closing its sockets.
type simConn struct {
	net.Conn
	nw       *Network
	from, to string
	id       uint64 // in the order dialled
	mu       sync.Mutex
	vanished bool
	closed   bool
	gone     chan struct{}
}

func (c *simConn) Vanish() {
	c.mu.Lock()
	c.vanished = true
	c.mu.Unlock()
}

func (c *simConn) isVanished() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vanished
}

func (c *simConn) Read(b []byte) (int, error) {
	if c.isVanished() {
		<-c.gone
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b)
	if err == nil && c.isVanished() {
		<-c.gone
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *simConn) Write(b []byte) (int, error) {
	if c.isVanished() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *simConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(t) }

func (c *simConn) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if already {
		return nil
	}
	close(c.gone)
	c.nw.mu.Lock()
	delete(c.nw.conns, c)
	c.nw.mu.Unlock()
	return c.Conn.Close()
}

// CutFrom closes every connection dialled by from and refuses its later
// dials: from (a process, an incarnation's tag) crashed.
func (nw *Network) CutFrom(from string) {
	nw.mu.Lock()
	if nw.dead == nil {
		nw.dead = map[string]bool{}
	}
	nw.dead[from] = true
	nw.mu.Unlock()
	for _, c := range nw.dialledBy(from) {
		_ = c.Close()
	}
}

// VanishFrom black-holes every open connection dialled by from.
func (nw *Network) VanishFrom(from string) {
	for _, c := range nw.dialledBy(from) {
		c.Vanish()
	}
}

// Break closes every open connection from has dialled to addr, as a
// network that resets them would, and returns how many it closed.
func (nw *Network) Break(from, addr string) int {
	n := 0
	for _, c := range nw.dialledBy(from) {
		if c.to == addr {
			_ = c.Close()
			n++
		}
	}
	return n
}

// dialledBy returns the open connections dialled by from.
func (nw *Network) dialledBy(from string) []*simConn {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var cs []*simConn
	for c := range nw.conns {
		if c.from == from {
			cs = append(cs, c)
		}
	}
	return cs
}

// ConnsTo returns the open connections to addr in the order they were
// dialled (to close them later: a node's old incarnation whose clients
// and peers an orchestrator moved).
func (nw *Network) ConnsTo(addr string) []net.Conn {
	nw.mu.Lock()
	var sc []*simConn
	for c := range nw.conns {
		if c.to == addr {
			sc = append(sc, c)
		}
	}
	nw.mu.Unlock()
	sort.Slice(sc, func(i, j int) bool { return sc[i].id < sc[j].id })
	cs := make([]net.Conn, len(sc))
	for i, c := range sc {
		cs[i] = c
	}
	return cs
}

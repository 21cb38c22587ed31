package realcluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// linkState is what a proxy does to the bytes of its connections.
type linkState int

const (
	linkPass  linkState = iota
	linkDelay           // every chunk waits delay before it is forwarded
	linkDrop            // connections are reset and new ones refused
	linkCut             // a black hole: nothing is forwarded, bytes are held
)

// proxy is one directed link between two nodes: a loopback listener that
// the dialling node reaches its peer through (relayd -peer-addr), so a
// fault on it touches the connections the dialler opens to the peer, both
// their request and their response bytes, and nothing in the other
// direction. It forwards to the peer's listen address.
type proxy struct {
	from, to string // node ids: from dials to through this proxy
	target   string
	ln       net.Listener

	mu     sync.Mutex
	state  linkState
	delay  time.Duration
	healed chan struct{} // closed when a cut ends (or the proxy closes)
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newProxy listens on a free loopback port and forwards to target.
func newProxy(from, to, target string) (*proxy, error) {
	if err := loopbackOnly(target); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy %s->%s: %w", from, to, err)
	}
	p := &proxy{from: from, to: to, target: target, ln: ln, healed: closedChan(), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// loopbackOnly refuses any address that is not on loopback.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s is not a loopback address: the real runner only uses loopback", addr)
	}
	return nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// accept ends when the listener is closed.
func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.closed || p.state == linkDrop
		if !refuse {
			p.conns[c] = struct{}{}
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		go p.serve(c)
	}
}

// serve forwards one connection until either end closes it.
func (p *proxy) serve(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		p.forget(c)
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.forget(c)
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Go(func() { p.pump(c, up) })
	pumps.Go(func() { p.pump(up, c) })
	pumps.Wait()
	p.forget(c)
	p.forget(up)
}

func (p *proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pump copies src to dst through the link's state; when either fails it
// closes both (the other pump then fails too).
func (p *proxy) pump(src, dst net.Conn) {
	defer func() {
		_ = src.Close()
		_ = dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass holds a chunk as the link's state says: until a cut heals, for the
// delay, or not at all; false when the proxy is closing.
func (p *proxy) pass() bool {
	p.mu.Lock()
	healed, delay, closed := p.healed, time.Duration(0), p.closed
	if p.state == linkDelay {
		delay = p.delay
	}
	p.mu.Unlock()
	if closed {
		return false
	}
	<-healed
	if delay > 0 {
		time.Sleep(delay)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}

// set changes the link's state. Dropping resets every open connection.
func (p *proxy) set(s linkState, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.state == linkCut && s != linkCut {
		close(p.healed)
	}
	if s == linkCut && p.state != linkCut {
		p.healed = make(chan struct{})
	}
	p.state, p.delay = s, delay
	if s == linkDrop {
		for c := range p.conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not an orderly close
			}
			_ = c.Close()
		}
	}
}

// close stops the proxy: the listener and every connection are closed and
// its goroutines have ended when it returns.
func (p *proxy) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.state == linkCut {
		close(p.healed)
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

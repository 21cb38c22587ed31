package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// This file is an in-memory listener with the semantics of grpc's
// test/bufconn (a pair of pipes per connection; a write blocks while the
// peer has sz unread bytes; deadlines; close and close-write), except that
// a pipe holds only the bytes that are unread instead of allocating its
// whole capacity up front. bufconn allocates 2 x 256 KiB per connection,
// which was most of the live heap of a run with hundreds of users (74% of
// it on Axis B, room 150). The capacity, hence when a writer to a client
// that stopped reading blocks, is what it was.

var (
	errListenerClosed = errors.New("closed")
	errPipeTimeout    = pipeTimeout{}
)

type pipeTimeout struct{}

func (pipeTimeout) Error() string   { return "i/o timeout" }
func (pipeTimeout) Timeout() bool   { return true }
func (pipeTimeout) Temporary() bool { return false }

// Listener is a net.Listener whose connections are in-memory pipes.
type Listener struct {
	mu   sync.Mutex
	sz   int
	ch   chan net.Conn
	done chan struct{}
}

// NewListener returns a listener whose connections are pipes of the
// network's capacity (what Network.Listen makes, without a network).
func NewListener() *Listener { return listenMem(bufSize) }

func listenMem(sz int) *Listener {
	return &Listener{sz: sz, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *Listener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, errListenerClosed
	case c := <-l.ch:
		return c, nil
	}
}

func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *Listener) Addr() net.Addr { return memAddr{} }

// DialContext connects to the listener.
func (l *Listener) DialContext(ctx context.Context) (net.Conn, error) {
	p1, p2 := newMemPipe(l.sz), newMemPipe(l.sz)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, errListenerClosed
	case l.ch <- &memConn{r: p1, w: p2}:
		return &memConn{r: p2, w: p1}, nil
	}
}

// memPipe is one direction of a connection: a FIFO of at most sz unread
// bytes. buf[r:] is unread; the consumed prefix is dropped as it grows.
type memPipe struct {
	mu    sync.Mutex
	sz    int
	buf   []byte
	r     int
	wwait sync.Cond
	rwait sync.Cond

	wtimedout, rtimedout bool
	wtimer, rtimer       *time.Timer
	closed, writeClosed  bool
}

func newMemPipe(sz int) *memPipe {
	p := &memPipe{sz: sz}
	p.wwait.L = &p.mu
	p.rwait.L = &p.mu
	return p
}

func (p *memPipe) unread() int { return len(p.buf) - p.r }

func (p *memPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed {
			return 0, io.ErrClosedPipe
		}
		if p.unread() > 0 {
			break
		}
		if p.writeClosed {
			return 0, io.EOF
		}
		if p.rtimedout {
			return 0, errPipeTimeout
		}
		p.rwait.Wait()
	}
	wasFull := p.unread() >= p.sz
	n := copy(b, p.buf[p.r:])
	p.r += n
	switch {
	case p.r == len(p.buf):
		// Empty: keep a small buffer for the next frames, free a large one.
		if cap(p.buf) > 64<<10 {
			p.buf = nil
		} else {
			p.buf = p.buf[:0]
		}
		p.r = 0
	case p.r > cap(p.buf)/2:
		p.buf = append(p.buf[:0], p.buf[p.r:]...)
		p.r = 0
	}
	if wasFull {
		p.wwait.Signal()
	}
	return n, nil
}

func (p *memPipe) Write(b []byte) (n int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	for len(b) > 0 {
		for {
			if p.closed || p.writeClosed {
				return 0, io.ErrClosedPipe
			}
			if p.unread() < p.sz {
				break
			}
			if p.wtimedout {
				return 0, errPipeTimeout
			}
			p.wwait.Wait()
		}
		wasEmpty := p.unread() == 0
		x := min(len(b), p.sz-p.unread())
		p.buf = append(p.buf, b[:x]...)
		b = b[x:]
		n += x
		if wasEmpty {
			p.rwait.Signal()
		}
	}
	return n, nil
}

func (p *memPipe) close(write bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if write {
		p.writeClosed = true
	} else {
		p.closed = true
	}
	p.rwait.Broadcast()
	p.wwait.Broadcast()
}

// memConn is one end of a connection: it reads r and writes w.
type memConn struct {
	r, w *memPipe
}

func (c *memConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *memConn) Write(b []byte) (int, error) { return c.w.Write(b) }

func (c *memConn) Close() error {
	c.r.close(false)
	c.w.close(true)
	return nil
}

func (c *memConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.r.deadline(t, &c.r.rtimer, &c.r.rtimedout, &c.r.rwait)
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.w.deadline(t, &c.w.wtimer, &c.w.wtimedout, &c.w.wwait)
	return nil
}

func (p *memPipe) deadline(t time.Time, timer **time.Timer, timedOut *bool, wait *sync.Cond) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *timer != nil {
		(*timer).Stop()
	}
	*timedOut = false
	if !t.IsZero() {
		*timer = time.AfterFunc(time.Until(t), func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			*timedOut = true
			wait.Broadcast()
		})
	}
}

func (*memConn) LocalAddr() net.Addr  { return memAddr{} }
func (*memConn) RemoteAddr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "bufconn" }
func (memAddr) String() string  { return "bufconn" }

package memnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Every test runs in a synctest bubble, as the simulation does: a blocked
// reader or writer is seen as blocked (synctest.Wait), deadlines run on
// the bubble's clock, and nothing depends on the machine's speed.

// onNode runs f in a synctest bubble with a network and the listener of
// its node n1 (closed when f returns).
func onNode(t *testing.T, f func(t *testing.T, nw *Network, l net.Listener)) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork()
		l := nw.Listen("n1")
		defer l.Close()
		f(t, nw, l)
	})
}

// closeAll closes every connection (the tests' cleanup).
func closeAll(cs ...net.Conn) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// dial connects from to addr on nw and returns both ends: the dialler's
// (a simConn) and the one the listener accepted.
func dial(t *testing.T, nw *Network, l net.Listener, from, addr string) (client, server net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Errorf("Accept: %v", err)
		}
		accepted <- c
	}()
	client, err := nw.Dialer(from)(context.Background(), addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	server = <-accepted
	if server == nil {
		t.FailNow()
	}
	return client, server
}

// send writes msg on w and reads it whole on r.
func send(t *testing.T, w, r net.Conn, msg string) {
	t.Helper()
	if n, err := w.Write([]byte(msg)); err != nil || n != len(msg) {
		t.Fatalf("Write(%q) = %d, %v", msg, n, err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("reading %q: %v", msg, err)
	}
	if string(got) != msg {
		t.Fatalf("read %q, want %q", got, msg)
	}
}

// readResult is what a read returned.
type readResult struct {
	b   []byte
	err error
}

// reads starts a read of up to n bytes on c; the result arrives on the
// channel when the read returns.
func reads(c net.Conn, n int) chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		b := make([]byte, n)
		k, err := c.Read(b)
		ch <- readResult{b[:k], err}
	}()
	return ch
}

// pending reports, once the bubble is quiet, whether the call whose one
// result goes to ch (a channel of capacity 1) is still blocked.
func pending[T any](ch chan T) bool {
	synctest.Wait()
	return len(ch) == 0
}

func TestDialAcceptRoundTrip(t *testing.T) {
	onNode(t, func(t *testing.T, nw *Network, l net.Listener) {
		client, server := dial(t, nw, l, "u1", "n1")
		send(t, client, server, "ping")
		send(t, server, client, "pong")
		// Both directions at once, larger than one read.
		big := strings.Repeat("0123456789", 1000)
		done := make(chan struct{})
		go func() {
			defer close(done)
			send(t, server, client, big)
		}()
		send(t, client, server, big)
		<-done

		if got := l.Addr().String(); got != "bufconn" {
			t.Errorf("listener address %q, want bufconn", got)
		}
		if got := client.RemoteAddr().Network(); got != "bufconn" {
			t.Errorf("remote address network %q, want bufconn", got)
		}
		if n := nw.Open("", ""); n != 1 {
			t.Errorf("Open(all) = %d, want 1", n)
		}
		if n := nw.Open("u1", "n"); n != 1 {
			t.Errorf("Open(u1, n) = %d, want 1", n)
		}
		if n := nw.Open("u2", ""); n != 0 {
			t.Errorf("Open(u2) = %d, want 0", n)
		}
		if n := nw.Open("", "m"); n != 0 {
			t.Errorf("Open(to m*) = %d, want 0", n)
		}
		if n := nw.OpenTo("n1"); n != 1 {
			t.Errorf("OpenTo(n1) = %d, want 1", n)
		}
		if n := nw.OpenTo("n2"); n != 0 {
			t.Errorf("OpenTo(n2) = %d, want 0", n)
		}
		if err := client.Close(); err != nil {
			t.Fatal(err)
		}
		if n := nw.Open("", ""); n != 0 {
			t.Errorf("Open after Close = %d, want 0", n)
		}
		_ = server.Close()
	})
}

func TestDialErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork()
		if _, err := nw.Dialer("u1")(context.Background(), "n9"); err == nil || !strings.Contains(err.Error(), "no such host") {
			t.Errorf("dial to no listener: %v, want no such host", err)
		}

		// A dial nobody accepts waits for its context.
		l := nw.Listen("n1")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		_, err := nw.Dialer("u1")(ctx, "n1")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("dial nobody accepts: %v, want the context's deadline", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("dial waited %v, want the context's 1s", waited)
		}

		// A closed listener refuses dials and accepts; closing twice is fine.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := nw.Dialer("u1")(context.Background(), "n1"); err == nil {
			t.Error("dial to a closed listener succeeded")
		}
		if _, err := l.Accept(); err == nil {
			t.Error("Accept on a closed listener succeeded")
		}
		if n := nw.Open("", ""); n != 0 {
			t.Errorf("failed dials left %d connections open", n)
		}
	})
}

// A restarted node listens anew: dials reach the new listener.
func TestListenAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork()
		old := nw.Listen("n1")
		_ = old.Close() // the node crashed
		l := nw.Listen("n1")
		defer l.Close()
		client, server := dial(t, nw, l, "u1", "n1")
		send(t, client, server, "hello again")
		_ = client.Close()
		_ = server.Close()
	})
}

// Closing one end: the peer reads what was written before the close and
// then io.EOF; the closed end neither reads nor writes; closing twice is
// fine.
func TestCloseSemantics(t *testing.T) {
	onNode(t, func(t *testing.T, nw *Network, l net.Listener) {
		client, server := dial(t, nw, l, "u1", "n1")

		blocked := reads(server, 16)
		if !pending(blocked) {
			t.Fatal("a read with nothing written returned")
		}
		if _, err := client.Write([]byte("last words")); err != nil {
			t.Fatal(err)
		}
		if r := <-blocked; r.err != nil || string(r.b) != "last words" {
			t.Fatalf("read %q, %v; want last words", r.b, r.err)
		}
		if _, err := client.Write([]byte("bye")); err != nil {
			t.Fatal(err)
		}
		if err := client.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(server)
		if err != nil || string(got) != "bye" {
			t.Errorf("peer read %q, %v after close; want bye then EOF", got, err)
		}
		if n, err := server.Read(make([]byte, 4)); n != 0 || err != io.EOF {
			t.Errorf("peer read again: %d, %v; want 0, EOF", n, err)
		}
		if _, err := server.Write([]byte("anyone?")); err == nil {
			t.Error("write to a closed peer succeeded")
		}
		if _, err := client.Read(make([]byte, 4)); err == nil {
			t.Error("read on a closed connection succeeded")
		}
		if _, err := client.Write([]byte("x")); err == nil {
			t.Error("write on a closed connection succeeded")
		}
		if err := client.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}

		// A read blocked when its own end closes returns an error.
		client2, server2 := dial(t, nw, l, "u1", "n1")
		blocked = reads(server2, 4)
		if !pending(blocked) {
			t.Fatal("a read with nothing written returned")
		}
		_ = server2.Close()
		if r := <-blocked; r.err == nil {
			t.Error("a read blocked at close returned no error")
		}
		_ = client2.Close()
	})
}

// timeout reports whether err is a net.Error that timed out.
func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestReadDeadline(t *testing.T) {
	onNode(t, func(t *testing.T, nw *Network, l net.Listener) {
		client, server := dial(t, nw, l, "u1", "n1")
		defer client.Close()
		defer server.Close()

		start := time.Now()
		if err := server.SetReadDeadline(start.Add(2 * time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err := server.Read(make([]byte, 4))
		if !timeout(err) {
			t.Fatalf("read past its deadline: %v, want a timeout", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("read timed out after %v, want 2s", waited)
		}
		// It stays timed out until the deadline moves.
		if _, err := server.Read(make([]byte, 4)); !timeout(err) {
			t.Errorf("second read past the deadline: %v, want a timeout", err)
		}
		// Bytes already there are still read past the deadline.
		if _, err := client.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(io.LimitReader(server, 3)); err != nil || string(b) != "abc" {
			t.Errorf("read of buffered bytes past the deadline: %q, %v", b, err)
		}
		// No deadline: the read waits for the write.
		if err := server.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		blocked := reads(server, 4)
		time.Sleep(time.Hour)
		if !pending(blocked) {
			t.Fatal("a read without a deadline returned")
		}
		if _, err := client.Write([]byte("late")); err != nil {
			t.Fatal(err)
		}
		if r := <-blocked; r.err != nil || string(r.b) != "late" {
			t.Errorf("read %q, %v; want late", r.b, r.err)
		}
		// A deadline moved later before it fires does not fire.
		_ = server.SetReadDeadline(time.Now().Add(time.Second))
		_ = server.SetReadDeadline(time.Now().Add(time.Minute))
		blocked = reads(server, 4)
		time.Sleep(30 * time.Second)
		if !pending(blocked) {
			t.Fatal("a read timed out at its old deadline")
		}
		if r := <-blocked; !timeout(r.err) {
			t.Errorf("read past the moved deadline: %v, want a timeout", r.err)
		}
		// The dialler's end (a simConn) passes SetDeadline through.
		start = time.Now()
		_ = client.SetDeadline(start.Add(time.Second))
		if _, err := client.Read(make([]byte, 4)); !timeout(err) || time.Since(start) != time.Second {
			t.Errorf("dialler's read: %v after %v, want a timeout after 1s", err, time.Since(start))
		}
	})
}

// A pipe holds at most its capacity of unread bytes: a writer waits for
// the reader (bufconn's blocking), or for its write deadline.
func TestBackpressureAndWriteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := listenMem(8)
		defer l.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := l.Accept()
			accepted <- c
		}()
		client, err := l.DialContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		server := <-accepted
		defer client.Close()
		defer server.Close()

		type writeResult struct {
			n   int
			err error
		}
		wrote := make(chan writeResult, 1)
		go func() {
			n, err := client.Write([]byte("0123456789abcdef")) // 16 bytes, twice the capacity
			wrote <- writeResult{n, err}
		}()
		if !pending(wrote) {
			t.Fatal("a write of twice the capacity did not wait for the reader")
		}
		got := make([]byte, 0, 16)
		for len(got) < 16 {
			b := make([]byte, 16)
			n, err := server.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			if n > 8 {
				t.Fatalf("read %d bytes at once from a pipe of 8", n)
			}
			got = append(got, b[:n]...)
		}
		if r := <-wrote; r.err != nil || r.n != 16 {
			t.Fatalf("write returned %d, %v; want 16, nil", r.n, r.err)
		}
		if string(got) != "0123456789abcdef" {
			t.Fatalf("read %q", got)
		}

		// Full pipe, nobody reading: the write deadline ends the wait.
		if _, err := client.Write([]byte("12345678")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = client.SetWriteDeadline(start.Add(3 * time.Second))
		if _, err := client.Write([]byte("x")); !timeout(err) {
			t.Errorf("write to a full pipe: %v, want a timeout", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("write timed out after %v, want 3s", waited)
		}
		// The peer's close ends the wait too.
		_ = client.SetWriteDeadline(time.Time{})
		go func() {
			n, err := client.Write([]byte("y"))
			wrote <- writeResult{n, err}
		}()
		if !pending(wrote) {
			t.Fatal("a write to a full pipe returned")
		}
		_ = server.Close()
		if r := <-wrote; r.err == nil {
			t.Error("a write blocked when the peer closed returned no error")
		}
	})
}

// Megabytes through a pipe of the network's capacity arrive whole and in
// order, whatever the sizes of the reads and writes.
func TestLargeTransfer(t *testing.T) {
	onNode(t, func(t *testing.T, nw *Network, l net.Listener) {
		client, server := dial(t, nw, l, "u1", "n1")
		want := make([]byte, 3<<20+17)
		for i := range want {
			want[i] = byte(i*7 + i>>9)
		}
		go func() {
			for b, k := want, 1; len(b) > 0; k++ {
				n := min(len(b), (k*40009)%(bufSize+1000)+1)
				if _, err := client.Write(b[:n]); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
				b = b[n:]
			}
			_ = client.Close()
		}()
		var got bytes.Buffer
		buf := make([]byte, 70001)
		for k := 1; ; k++ {
			n, err := server.Read(buf[:(k*977)%len(buf)+1])
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("received %d bytes, not the %d sent", got.Len(), len(want))
		}
		_ = server.Close()
	})
}

// Cuts are one-way link state the harness consults; they do not touch
// connections.
func TestCutUncutHeal(t *testing.T) {
	nw := NewNetwork()
	nw.Cut("n1", "n2")
	nw.Cut("n2", "n3")
	for _, c := range []struct {
		from, to string
		want     bool
	}{{"n1", "n2", true}, {"n2", "n1", false}, {"n2", "n3", true}, {"n1", "n3", false}} {
		if got := nw.Blocked(c.from, c.to); got != c.want {
			t.Errorf("Blocked(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	nw.Uncut("n1", "n2")
	if nw.Blocked("n1", "n2") || !nw.Blocked("n2", "n3") {
		t.Error("Uncut(n1, n2) did not restore just that link")
	}
	nw.Uncut("n3", "n1") // not cut: nothing happens
	nw.Cut("n1", "n2")
	nw.Heal()
	if nw.Blocked("n1", "n2") || nw.Blocked("n2", "n3") {
		t.Error("Heal left a link cut")
	}
}

// CutFrom is a crash of the dialler: its connections close, its later
// dials fail, and nobody else's connections notice.
func TestCutFrom(t *testing.T) {
	onNode(t, func(t *testing.T, nw *Network, l net.Listener) {
		c1, s1 := dial(t, nw, l, "n2#1", "n1")
		c2, s2 := dial(t, nw, l, "u1", "n1")
		peerRead := reads(s1, 4)
		if !pending(peerRead) {
			t.Fatal("a read with nothing written returned")
		}

		nw.CutFrom("n2#1")
		if r := <-peerRead; r.err != io.EOF {
			t.Errorf("peer of a crashed dialler read %v, want EOF", r.err)
		}
		if _, err := c1.Read(make([]byte, 1)); err == nil {
			t.Error("a crashed dialler's connection still reads")
		}
		if _, err := c1.Write([]byte("x")); err == nil {
			t.Error("a crashed dialler's connection still writes")
		}
		if n := nw.Open("n2#1", ""); n != 0 {
			t.Errorf("a crashed dialler has %d open connections", n)
		}
		if _, err := nw.Dialer("n2#1")(context.Background(), "n1"); err == nil || !strings.Contains(err.Error(), "crashed") {
			t.Errorf("a crashed dialler dialled: %v", err)
		}
		// The next incarnation and the other dialler are unaffected.
		send(t, c2, s2, "still here")
		c3, s3 := dial(t, nw, l, "n2#2", "n1")
		send(t, c3, s3, "back")
		if n := nw.Open("", ""); n != 2 {
			t.Errorf("Open = %d, want 2", n)
		}
		closeAll(c1, s1, c2, s2, c3, s3)
	})
}

// A vanished connection is a black hole on the dialler's side: its writes
// are swallowed, its reads wait until it is closed, and the peer sees
// neither a close nor data.
func TestVanishFrom(t *testing.T) {
	onNode(t, func(t *testing.T, nw *Network, l net.Listener) {
		c1, s1 := dial(t, nw, l, "u1", "n1")
		c2, s2 := dial(t, nw, l, "u2", "n1")
		inFlight := reads(c1, 8) // a read waiting when the client vanishes
		if !pending(inFlight) {
			t.Fatal("a read with nothing written returned")
		}

		nw.VanishFrom("u1")
		if n, err := c1.Write([]byte("into the void")); err != nil || n != 13 {
			t.Errorf("vanished write: %d, %v; want 13, nil", n, err)
		}
		// The server still writes (into a buffer nobody reads), and the
		// read in flight swallows it and waits on.
		if _, err := s1.Write([]byte("hello?")); err != nil {
			t.Errorf("write to a vanished peer: %v", err)
		}
		later := reads(c1, 8)
		_ = s1.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := s1.Read(make([]byte, 16)); !timeout(err) {
			t.Errorf("peer of a vanished connection read %v, want nothing until its deadline", err)
		}
		if !pending(inFlight) || !pending(later) {
			t.Fatal("a vanished connection's read returned before Close")
		}
		if n := nw.Open("u1", ""); n != 1 {
			t.Errorf("a vanished connection is not open: Open(u1) = %d", n)
		}
		// Others are unaffected.
		send(t, c2, s2, "fine")
		send(t, s2, c2, "fine")

		_ = c1.Close()
		for _, ch := range []chan readResult{inFlight, later} {
			if r := <-ch; !errors.Is(r.err, net.ErrClosed) {
				t.Errorf("vanished read after Close: %v, want net.ErrClosed", r.err)
			}
		}
		if _, err := c1.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read on a closed vanished connection: %v, want net.ErrClosed", err)
		}
		if n := nw.Open("", ""); n != 1 {
			t.Errorf("Open = %d, want 1", n)
		}
		closeAll(s1, c2, s2)
	})
}

// Break resets the connections from has to one address, and only those.
func TestBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork()
		l1, l2 := nw.Listen("n1"), nw.Listen("n2")
		defer l1.Close()
		defer l2.Close()
		a, sa := dial(t, nw, l1, "n3", "n1")
		b, sb := dial(t, nw, l1, "n3", "n1")
		c, sc := dial(t, nw, l2, "n3", "n2")
		d, sd := dial(t, nw, l1, "n4", "n1")

		if n := nw.Break("n3", "n1"); n != 2 {
			t.Errorf("Break(n3, n1) = %d, want 2", n)
		}
		for _, s := range []net.Conn{sa, sb} {
			if _, err := s.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("peer of a broken connection read %v, want EOF", err)
			}
		}
		if _, err := a.Write([]byte("x")); err == nil {
			t.Error("a broken connection still writes")
		}
		send(t, c, sc, "n2 is fine")
		send(t, d, sd, "n4 is fine")
		if n := nw.Break("n3", "n1"); n != 0 {
			t.Errorf("Break again = %d, want 0", n)
		}
		if n := nw.Open("n3", ""); n != 1 {
			t.Errorf("Open(n3) = %d, want 1", n)
		}
		// Breaking does not refuse new dials (CutFrom does).
		e, se := dial(t, nw, l1, "n3", "n1")
		send(t, e, se, "again")
		closeAll(a, sa, b, sb, c, sc, d, sd, e, se)
	})
}

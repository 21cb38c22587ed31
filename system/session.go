package system

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// session is one user's delivery stream on this node. It delivers each room's
// messages in seq order, each once: a duplicate is dropped, a gap is filled
// from the room log first. Its state is guarded by a 1-slot channel, not a
// mutex, because filling a gap reads Redis while holding it.
//
// Closing does not take that lock: replay holds it while it waits for the
// client to make room in the outbox, and a stopping node or a newer session
// must be able to end the session meanwhile.
type session struct {
	node *Node
	user string
	gen  uint64
	lock chan struct{}
	// last is the last seq handed to the client per room (under lock).
	last map[string]uint64
	out  chan *relaypb.Delivery
	done chan struct{}

	closeMu sync.Mutex // guards reason; only held to set or read it
	reason  error      // why the session ended; set once, when done closes
}

func newSession(n *Node, user string, gen uint64, cursors []*relaypb.Cursor) *session {
	s := &session{
		node: n, user: user, gen: gen,
		lock: make(chan struct{}, 1),
		last: make(map[string]uint64, len(cursors)),
		out:  make(chan *relaypb.Delivery, n.cfg.OutboxSize),
		done: make(chan struct{}),
	}
	for _, c := range cursors {
		if c.GetSeq() > s.last[c.GetRoom()] {
			s.last[c.GetRoom()] = c.GetSeq()
		}
	}
	return s
}

// acquire takes the session lock. An ended session or context wins over a
// free lock even when both are ready: a select picks at random among ready
// cases, and the outcome must not depend on that.
func (s *session) acquire(ctx context.Context) error {
	if err := s.ended(ctx); err != nil {
		return err
	}
	select {
	case s.lock <- struct{}{}:
		if err := s.ended(ctx); err != nil {
			s.release()
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errSessionClosed
	}
}

// ended reports a closed session or a done context.
func (s *session) ended(ctx context.Context) error {
	select {
	case <-s.done:
		return errSessionClosed
	default:
	}
	return ctx.Err()
}

func (s *session) release() { <-s.lock }

var errSessionClosed = status.Error(codes.Unavailable, "session closed")

// deliver hands a live message to the client, after any gap before it.
func (s *session) deliver(ctx context.Context, d *relaypb.Delivery) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if s.isClosed() {
		return errSessionClosed
	}
	last, known := s.last[d.Room]
	if d.Seq <= last {
		return nil // duplicate (a retried relay, or already replayed)
	}
	if known && d.Seq == last+1 {
		// The next seq of a room the session knows: fan-out reads the
		// membership atomically with the seq, so it lies inside a window.
		return s.pushLocked(d)
	}
	// A gap, or the first message of a room this session has not seen:
	// fill from the log, and deliver d only if it is inside a window (a
	// stale relay or a late joiner must not receive it).
	wins, err := s.fillLocked(ctx, d.Room, d.Seq-1, false)
	if err != nil {
		return err
	}
	if d.Seq <= s.last[d.Room] {
		return nil
	}
	if !inWindows(wins, d.Seq) {
		s.last[d.Room] = d.Seq
		return nil
	}
	return s.pushLocked(d)
}

func inWindows(wins []Window, seq uint64) bool {
	for _, w := range wins {
		if w.Contains(seq) {
			return true
		}
	}
	return false
}

// catchUp replays everything of room up to its current seq (after connect),
// at the client's pace: a backlog longer than the outbox waits for the
// stream rather than ending the session.
func (s *session) catchUp(ctx context.Context, room string) error {
	seq, err := s.node.dir.RoomSeq(ctx, room)
	if err != nil {
		return err
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, err = s.fillLocked(ctx, room, seq, true)
	return err
}

// fillLocked delivers the room-log entries after last and up to upto that lie
// inside the user's membership windows, and returns the windows it read. With
// wait it waits for room in the outbox; otherwise a full outbox ends the
// session (see pushLocked).
func (s *session) fillLocked(ctx context.Context, room string, upto uint64, wait bool) ([]Window, error) {
	last := s.last[room]
	wins, err := s.node.dir.Windows(ctx, room, s.user)
	if err != nil {
		return nil, fmt.Errorf("fill %s for %s: %w", room, s.user, err)
	}
	for _, w := range wins {
		from, to := max(w.From, last+1), upto
		if w.To != 0 {
			to = min(to, w.To)
		}
		if from > to {
			continue
		}
		entries, err := s.node.dir.Log(ctx, room, from, to)
		if err != nil {
			return nil, fmt.Errorf("fill %s for %s: %w", room, s.user, err)
		}
		for _, e := range entries {
			d := &relaypb.Delivery{Room: room, Seq: e.Seq, MsgId: e.MsgID, Sender: e.Sender, Payload: e.Payload, FromLog: true}
			push := s.pushLocked
			if wait {
				push = func(d *relaypb.Delivery) error { return s.pushWaitLocked(ctx, d) }
			}
			if err := push(d); err != nil {
				return nil, err
			}
		}
	}
	// Seqs outside every window are skipped, not owed: move past them. The
	// room is known from now on, even when nothing was owed.
	s.last[room] = max(s.last[room], upto)
	return wins, nil
}

// pushLocked queues d for the client. A client whose outbox is full is a slow
// consumer: its session ends and it catches up from its cursor on reconnect.
func (s *session) pushLocked(d *relaypb.Delivery) error {
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	default:
		s.close(status.Errorf(codes.ResourceExhausted, "client %s too slow: %d deliveries pending", s.user, len(s.out)))
		return s.err()
	}
}

// pushWaitLocked queues d, waiting while the outbox is full, until the
// session ends.
func (s *session) pushWaitLocked(ctx context.Context, d *relaypb.Delivery) error {
	if err := s.ended(ctx); err != nil {
		return err
	}
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	case <-s.done:
		return s.err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close ends the session (client gone, node shutdown, replaced session, slow
// client); the stream handler notices done and returns. Only the first
// reason is kept.
func (s *session) close(reason error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.reason != nil {
		return
	}
	if reason == nil {
		reason = errSessionClosed
	}
	s.reason = reason
	close(s.done)
}

func (s *session) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// err is why the session ended, or nil while it is open.
func (s *session) err() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.reason
}

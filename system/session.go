package system

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// session is one user's delivery stream on this node. It delivers each room's
// messages in seq order, each once: a duplicate is dropped, a gap is filled
// from the room log first. Its state is guarded by a 1-slot channel, not a
// mutex, because filling a gap reads Redis while holding it.
type session struct {
	node *Node
	user string
	gen  uint64
	lock chan struct{}
	// last is the last seq handed to the client per room (under lock).
	last map[string]uint64
	out  chan *relaypb.Delivery
	done chan struct{}
	// closed and reason are written once, under lock.
	closed bool
	reason error
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

func (s *session) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errSessionClosed
	}
}

func (s *session) release() { <-s.lock }

var errSessionClosed = status.Error(codes.Unavailable, "session closed")

// deliver hands a live message to the client, after any gap before it.
func (s *session) deliver(ctx context.Context, d *relaypb.Delivery) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if s.closed {
		return errSessionClosed
	}
	last := s.last[d.Room]
	if d.Seq <= last {
		return nil // duplicate (a retried relay, or already replayed)
	}
	if d.Seq > last+1 {
		if err := s.fillLocked(ctx, d.Room, d.Seq-1); err != nil {
			return err
		}
		if d.Seq <= s.last[d.Room] {
			return nil
		}
	}
	return s.pushLocked(d)
}

// catchUp replays everything of room up to its current seq (after connect).
func (s *session) catchUp(ctx context.Context, room string) error {
	seq, err := s.node.dir.RoomSeq(ctx, room)
	if err != nil {
		return err
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	return s.fillLocked(ctx, room, seq)
}

// fillLocked delivers the room-log entries after last and up to upto that lie
// inside the user's membership windows.
func (s *session) fillLocked(ctx context.Context, room string, upto uint64) error {
	last := s.last[room]
	wins, err := s.node.dir.Windows(ctx, room, s.user)
	if err != nil {
		return fmt.Errorf("fill %s for %s: %w", room, s.user, err)
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
			return fmt.Errorf("fill %s for %s: %w", room, s.user, err)
		}
		for _, e := range entries {
			d := &relaypb.Delivery{Room: room, Seq: e.Seq, MsgId: e.MsgID, Sender: e.Sender, Payload: e.Payload, FromLog: true}
			if err := s.pushLocked(d); err != nil {
				return err
			}
		}
	}
	// Seqs outside every window are skipped, not owed: move past them.
	if s.last[room] < upto {
		s.last[room] = upto
	}
	return nil
}

// pushLocked queues d for the client. A client whose outbox is full is a slow
// consumer: its session ends and it catches up from its cursor on reconnect.
func (s *session) pushLocked(d *relaypb.Delivery) error {
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	default:
		s.closeLocked(status.Errorf(codes.ResourceExhausted, "client %s too slow: %d deliveries pending", s.user, len(s.out)))
		return s.reason
	}
}

// closeLocked ends the session; the stream handler notices done and returns.
func (s *session) closeLocked(reason error) {
	if s.closed {
		return
	}
	s.closed, s.reason = true, reason
	close(s.done)
}

// close ends the session from outside (node shutdown, replaced session).
func (s *session) close(reason error) {
	select {
	case s.lock <- struct{}{}:
		s.closeLocked(reason)
		s.release()
	case <-s.done:
	}
}

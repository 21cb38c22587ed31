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
// from the room log first. Its state is guarded by a lock that may be held
// across Redis reads (a gap fill), so it is not a sync.Mutex: waiters block
// on a channel, and every attempt to take it passes the node's hooks.
//
// Closing does not take that lock: replay holds it while it waits for the
// client to make room in the outbox, and a stopping node or a newer session
// must be able to end the session meanwhile.
type session struct {
	node *Node
	user string
	gen  uint64
	// lockMu guards locked and freed only (never held across a block);
	// freed is closed when the lock is let go.
	lockMu sync.Mutex
	locked bool
	freed  chan struct{}
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
		freed: make(chan struct{}),
		last:  make(map[string]uint64, len(cursors)),
		out:   make(chan *relaypb.Delivery, n.cfg.OutboxSize),
		done:  make(chan struct{}),
	}
	for _, c := range cursors {
		if c.GetSeq() > s.last[c.GetRoom()] {
			s.last[c.GetRoom()] = c.GetSeq()
		}
	}
	return s
}

// acquire takes the session lock. Every attempt parks at the hooks first,
// and a waiter woken by a release does nothing but park again: when the
// holder lets go, which waiter gets the lock is the embedder's choice, and
// the releaser never races a waiter that has already resumed its work. An
// ended session or context wins over a free lock.
func (s *session) acquire(ctx context.Context) error {
	for try := 1; ; try++ {
		s.node.hooks.Gate(ctx, Point{Node: s.node.cfg.NodeID, Kind: PointSessionLock, Key: fmt.Sprintf("%s #%d %s try%d", s.user, s.gen, Label(ctx), try)})
		if err := s.ended(ctx); err != nil {
			return err
		}
		s.lockMu.Lock()
		if !s.locked {
			s.locked = true
			s.lockMu.Unlock()
			return nil
		}
		freed := s.freed
		s.lockMu.Unlock()
		s.node.probe(ProbeSessionLockWaited)
		// Whatever wakes the waiter (a release, the session ending, the
		// context), it parks again before acting on it.
		select {
		case <-freed:
		case <-ctx.Done():
		case <-s.done:
		}
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

func (s *session) release() {
	s.lockMu.Lock()
	s.locked = false
	close(s.freed)
	s.freed = make(chan struct{})
	s.lockMu.Unlock()
}

var errSessionClosed = status.Error(codes.Unavailable, "session closed")

// deliver hands a live message to the client, after any gap before it.
//
// The next seq of a known room is pushed without waiting: a client that
// cannot absorb OutboxSize live messages is a slow consumer and its session
// ends (see pushLocked). A gap fill, and the message after it, wait for
// outbox room like replay does: how many entries a gap holds says nothing
// about the client's pace (a replay that just streamed a backlog may have
// left the outbox nearly full), so a healthy client must not be ended for
// it. The wait ends with ctx or the session.
func (s *session) deliver(ctx context.Context, d *relaypb.Delivery) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if s.isClosed() {
		s.node.probe(ProbeSessionClosedOnDeliver)
		return errSessionClosed
	}
	last, known := s.last[d.Room]
	if d.Seq <= last {
		s.node.probe(ProbeSessionDuplicate)
		return nil // duplicate (a retried relay, or already replayed)
	}
	if known && d.Seq == last+1 {
		// The next seq of a room the session knows: fan-out reads the
		// membership atomically with the seq, so it lies inside a window.
		return s.pushLocked(d)
	}
	if known {
		s.node.probe(ProbeSessionGap)
	} else {
		s.node.probe(ProbeSessionFirstOfRoom)
	}
	// A gap, or the first message of a room this session has not seen:
	// fill from the log, and deliver d only if it is inside a window (a
	// stale relay or a late joiner must not receive it).
	wins, _, err := s.fillLocked(ctx, d.Room, d.Seq-1, ProbeSessionGapWaitedFull)
	if err != nil {
		return err
	}
	if d.Seq <= s.last[d.Room] {
		return nil
	}
	if !inWindows(wins, d.Seq) {
		s.node.probe(ProbeSessionOutsideWindow)
		s.last[d.Room] = d.Seq
		return nil
	}
	return s.pushWaitLocked(ctx, d, ProbeSessionGapWaitedFull)
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
// stream rather than ending the session. periodic: a catch-up tick, not
// the replay after connect.
func (s *session) catchUp(ctx context.Context, room string, periodic bool) error {
	seq, err := s.node.dir.RoomSeq(ctx, room)
	if err != nil {
		return err
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, pushed, err := s.fillLocked(ctx, room, seq, ProbeSessionReplayWaitedFull)
	if periodic && pushed > 0 {
		s.node.probe(ProbeSessionCatchUpFilled)
	}
	return err
}

// fillLocked delivers the room-log entries after last and up to upto that lie
// inside the user's membership windows, and returns the windows it read
// and how many entries it pushed. It waits for room in the outbox
// (pushWaitLocked, which hits waitProbe when it waits), for replay and
// live gap fills alike: the client sets the pace.
func (s *session) fillLocked(ctx context.Context, room string, upto uint64, waitProbe string) ([]Window, int, error) {
	last := s.last[room]
	pushed := 0
	wins, err := s.node.dir.Windows(ctx, room, s.user)
	if err != nil {
		return nil, 0, fmt.Errorf("fill %s for %s: %w", room, s.user, err)
	}
	for _, w := range wins {
		from, to := max(w.From, last+1), upto
		if w.To != 0 {
			to = min(to, w.To)
		}
		if from > to {
			continue
		}
		// A page at a time: the fill holds one page of the log, never
		// the whole backlog (a client with a long history).
		for from <= to {
			end := min(to, from+uint64(s.node.cfg.ReplayPage)-1)
			entries, err := s.node.dir.Log(ctx, room, from, end)
			if err != nil {
				return nil, pushed, fmt.Errorf("fill %s for %s: %w", room, s.user, err)
			}
			for _, e := range entries {
				d := &relaypb.Delivery{Room: room, Seq: e.Seq, MsgId: e.MsgID, Sender: e.Sender, Payload: e.Payload, FromLog: true}
				if err := s.pushWaitLocked(ctx, d, waitProbe); err != nil {
					return nil, pushed, err
				}
				pushed++
			}
			if uint64(len(entries)) < end-from+1 {
				break // the log ends before to
			}
			from = end + 1
		}
	}
	// Seqs outside every window are skipped, not owed: move past them. The
	// room is known from now on, even when nothing was owed.
	s.last[room] = max(s.last[room], upto)
	return wins, pushed, nil
}

// pushLocked queues d for the client. A client whose outbox is full is a slow
// consumer: its session ends and it catches up from its cursor on reconnect.
func (s *session) pushLocked(d *relaypb.Delivery) error {
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	default:
		s.node.probe(ProbeSessionSlowConsumer)
		s.close(status.Errorf(codes.ResourceExhausted, "client %s too slow: %d deliveries pending", s.user, len(s.out)))
		return s.err()
	}
}

// pushWaitLocked queues d, waiting while the outbox is full, until the
// session ends. A wait hits waitProbe (and how it ended, its own probe).
func (s *session) pushWaitLocked(ctx context.Context, d *relaypb.Delivery, waitProbe string) error {
	if err := s.ended(ctx); err != nil {
		return err
	}
	// Only the pump takes from out, and only the lock holder puts: a
	// full outbox now means the push below waits (a read, no decision).
	waits := len(s.out) == cap(s.out)
	if waits {
		s.node.probe(waitProbe)
	}
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	case <-s.done:
		if waits {
			s.node.probe(ProbeSessionEndedWhileWaiting)
		}
		return s.err()
	case <-ctx.Done():
		if waits {
			s.node.probe(ProbeSessionWaitCancelled)
		}
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
	s.node.ending.Add(1) // until closeSession has unregistered it
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

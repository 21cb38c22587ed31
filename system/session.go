package system

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	// lockMu guards locked, blocked and freed only (never held across a
	// block); freed is closed when the lock is let go, and when its
	// holder starts waiting for the client (blocked).
	lockMu  sync.Mutex
	locked  bool
	blocked bool // the holder waits for outbox room: only the client can end that
	freed   chan struct{}
	// kick wakes the session's catch-up (syncLoop) at once: a live
	// delivery that could not be pushed without waiting for the client
	// left its message to it.
	kick chan struct{}
	// last is the last seq handed to the client per room (under lock).
	last map[string]uint64
	out  chan *relaypb.Delivery
	done chan struct{}
	// pushed counts the deliveries put in out (by the lock holder) and
	// sent those the pump took past its gate: whether the outbox is full
	// is decided from them (full), never from len(out), which the pump
	// changes at a moment no gate orders, so that the decision is the
	// same in every run of a seed.
	pushed uint64
	sent   atomic.Uint64

	closeMu sync.Mutex // guards reason; only held to set or read it
	reason  error      // why the session ended; set once, when done closes
}

func newSession(n *Node, user string, gen uint64, cursors []*relaypb.Cursor) *session {
	s := &session{
		node: n, user: user, gen: gen,
		freed: make(chan struct{}),
		kick:  make(chan struct{}, 1),
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
// ended session or context wins over a free lock. live: a live delivery,
// which never waits behind a holder that waits for the client (blocked):
// it gets errLeftToCatchUp instead.
func (s *session) acquire(ctx context.Context, live bool) error {
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
		if live && s.blocked {
			s.lockMu.Unlock()
			s.node.probe(ProbeSessionLockHeldByWait)
			return errLeftToCatchUp
		}
		freed := s.freed
		s.lockMu.Unlock()
		s.node.probe(ProbeSessionLockWaited)
		// Whatever wakes the waiter (a release, the holder starting to
		// wait for the client, the session ending, the context), it parks
		// again before acting on it.
		select {
		case <-freed:
		case <-ctx.Done():
		case <-s.done:
		}
	}
}

// setBlocked records that the holder waits (or no longer waits) for the
// client, and wakes the lock's waiters when it starts: a live delivery
// must not wait behind it.
func (s *session) setBlocked(b bool) {
	s.lockMu.Lock()
	s.blocked = b
	if b {
		close(s.freed)
		s.freed = make(chan struct{})
	}
	s.lockMu.Unlock()
}

// errLeftToCatchUp: a live delivery could not be made without waiting for
// the client (its outbox full, or the lock held by a push that waits for
// room); the session's catch-up, woken at once, delivers it from the log.
var errLeftToCatchUp = errors.New("left to the catch-up")

// wakeCatchUp has the session's catch-up run now (syncLoop).
func (s *session) wakeCatchUp() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// liveOnly marks a context whose pushes never wait for outbox room (a
// live delivery's): a full outbox is errLeftToCatchUp.
type liveOnlyKey struct{}

func liveOnly(ctx context.Context) bool { return ctx.Value(liveOnlyKey{}) != nil }

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
// A live delivery runs on an executor worker or in a relay handler, so it
// never waits for the client: it takes the session lock within
// SlowClientAfter, and not at all while the holder waits for outbox
// room; and it pushes without waiting. When it cannot (the lock, a full
// outbox) it leaves the message to the session's catch-up, woken at once,
// which waits for the client at the client's pace, at most
// SlowClientAfter per push (pushWaitLocked). The next seq of a known room
// is pushed at once; a gap, or a room the session has not seen, is filled
// from the log first.
func (s *session) deliver(ctx context.Context, d *relaypb.Delivery) error {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, liveOnlyKey{}, true), s.node.cfg.SlowClientAfter)
	defer cancel()
	err := s.deliverLive(ctx, d)
	switch {
	case errors.Is(err, errLeftToCatchUp):
		s.wakeCatchUp()
		return nil
	case errors.Is(err, context.DeadlineExceeded) && !s.isClosed():
		s.node.probe(ProbeSessionLockTimedOut)
		s.wakeCatchUp()
		return nil
	}
	return err
}

func (s *session) deliverLive(ctx context.Context, d *relaypb.Delivery) error {
	if err := s.acquire(ctx, true); err != nil {
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
	if err := s.acquire(ctx, false); err != nil {
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
		entries, err := s.node.dir.Log(ctx, room, from, to)
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
	}
	// Seqs outside every window are skipped, not owed: move past them. The
	// room is known from now on, even when nothing was owed.
	s.last[room] = max(s.last[room], upto)
	return wins, pushed, nil
}

// full says the outbox holds OutboxSize deliveries the pump has not
// taken past its gate (lock held).
func (s *session) full() bool { return s.pushed-s.sent.Load() >= uint64(cap(s.out)) }

// put queues d, which full said has room (lock held).
func (s *session) put(d *relaypb.Delivery) {
	s.out <- d
	s.pushed++
	s.last[d.Room] = d.Seq
}

// pushLocked queues d for the client without waiting. A full outbox
// says nothing of the client's pace (a replay that just streamed a
// backlog at that pace leaves it full): the message is left to the
// session's catch-up, which waits for the client at most SlowClientAfter
// (pushWaitLocked) and only then ends the session as too slow.
func (s *session) pushLocked(d *relaypb.Delivery) error {
	if s.full() {
		s.node.probe(ProbeSessionLiveLeftFull)
		return errLeftToCatchUp
	}
	s.put(d)
	return nil
}

// pushWaitLocked queues d, waiting while the outbox is full, at most
// SlowClientAfter: a client that takes no delivery for that long is too
// slow, and its session ends (ResourceExhausted; it reconnects and
// resumes from its cursor). While it waits, the lock's live waiters leave
// their messages to the catch-up instead of waiting behind it. Under a
// live delivery's context (liveOnly) it never waits: a full outbox is
// errLeftToCatchUp. A wait hits waitProbe (and how it ended, its own
// probe).
func (s *session) pushWaitLocked(ctx context.Context, d *relaypb.Delivery, waitProbe string) error {
	if err := s.ended(ctx); err != nil {
		return err
	}
	// Only the pump takes from out, and only the lock holder puts: a
	// full outbox now means the push below waits (a read, no decision).
	waits := s.full()
	if waits {
		s.node.probe(waitProbe)
		if liveOnly(ctx) {
			s.node.probe(ProbeSessionLiveLeftFull)
			return errLeftToCatchUp
		}
		s.setBlocked(true)
		defer s.setBlocked(false)
		slow := time.NewTimer(s.node.cfg.SlowClientAfter)
		defer slow.Stop()
		select {
		case s.out <- d:
			s.pushed++
			s.last[d.Room] = d.Seq
			return nil
		case <-s.done:
			s.node.probe(ProbeSessionEndedWhileWaiting)
			return s.err()
		case <-ctx.Done():
			s.node.probe(ProbeSessionWaitCancelled)
			return ctx.Err()
		case <-slow.C:
			// Room that came at the very instant the wait ran out wins,
			// whichever case the select took.
			select {
			case s.out <- d:
				s.pushed++
				s.last[d.Room] = d.Seq
				return nil
			default:
			}
			s.node.probe(ProbeSessionSlowConsumer)
			s.close(status.Errorf(codes.ResourceExhausted, "client %s too slow: took no delivery for %v (%d pending)", s.user, s.node.cfg.SlowClientAfter, len(s.out)))
			return s.err()
		}
	}
	s.put(d)
	return nil
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

package system

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// holder is found waiting for the client (blocked).
	lockMu sync.Mutex
	locked bool
	// blocked: the holder, a replay or catch-up push, has waited
	// LivePushWait for outbox room and waits on. It is set and cleared by
	// the holder and read by a live delivery after a park at the hooks,
	// when the bubble is quiet: then it is true exactly while the holder
	// waits in that select, whatever the race that led there.
	blocked bool
	freed   chan struct{}
	// kick wakes the session's catch-up (syncLoop) at once: a live
	// delivery that could not be made within LiveLockWait left its
	// message to it.
	kick chan struct{}
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
// ended session or context wins over a free lock.
//
// live: a live delivery's, which never waits behind a holder that waits
// for the client (blocked), and waits at most LiveLockWait for the lock
// (once that has run out the waiter parks at the hooks once more and
// takes the lock if it is free then); else it gives up with
// errLeftToCatchUp. Every look at the lock follows a park at the hooks,
// when the bubble is quiet: what the waiter decides never depends on how
// goroutines raced.
func (s *session) acquire(ctx context.Context, live bool) error {
	var expired <-chan time.Time
	if live {
		t := time.NewTimer(s.node.cfg.LiveLockWait)
		defer t.Stop()
		expired = t.C
	}
	timedOut := false
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
		blocked, freed := s.blocked, s.freed
		s.lockMu.Unlock()
		if live && blocked {
			s.node.probe(ProbeSessionLockHeldByWait)
			return errLeftToCatchUp
		}
		if timedOut {
			s.node.probe(ProbeSessionLockTimedOut)
			return errLeftToCatchUp
		}
		s.node.probe(ProbeSessionLockWaited)
		// Whatever wakes the waiter (a release, the holder found waiting
		// for the client, the wait running out, the session ending, the
		// context), it parks again before acting on it.
		select {
		case <-freed:
		case <-ctx.Done():
		case <-s.done:
		case <-expired:
			timedOut = true
		}
	}
}

// setBlocked records that the holder waits (or no longer waits) for the
// client; when it starts, the lock's waiters wake (and park at the hooks
// before they look): a live delivery does not wait behind it. The holder
// starts only when a timer fires, so when the bubble was quiet.
func (s *session) setBlocked(b bool) {
	s.lockMu.Lock()
	s.blocked = b
	if b {
		close(s.freed)
		s.freed = make(chan struct{})
	}
	s.lockMu.Unlock()
}

// errLeftToCatchUp: a live delivery could not be made within its bounds
// (the session lock held by a push that waits for the client, or for
// LiveLockWait; no outbox room within LivePushWait); the session's
// catch-up, woken at once, delivers it from the log.
var errLeftToCatchUp = errors.New("left to the catch-up")

// wakeCatchUp has the session's catch-up run now (syncLoop). Its callers
// decide to call it after a park at the hooks, and a pending wake-up
// absorbs a second one whenever it comes: one pass serves both.
func (s *session) wakeCatchUp() {
	select {
	case s.kick <- struct{}{}:
	default:
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
// A live delivery runs on an executor worker or in a relay handler, so it
// waits for the client only briefly: it takes the session lock within
// LiveLockWait, and not at all while the holder waits for the client
// (blocked); it waits at most LivePushWait for each push's outbox room.
// A client reading at its pace makes room (a replay that just streamed a
// backlog leaves the outbox full: that says nothing of the client's
// pace). When it cannot (the lock, a full outbox that does not drain)
// the message is left to the session's catch-up, woken at once, which
// waits for the client at most SlowClientAfter per push and then ends
// the session as too slow. The next seq of a known room is pushed
// at once; a gap, or a room the session has not seen, is filled from the
// log first.
func (s *session) deliver(ctx context.Context, d *relaypb.Delivery) error {
	err := s.deliverLive(ctx, d)
	if errors.Is(err, errLeftToCatchUp) {
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
		return s.pushWaitLocked(ctx, d, ProbeSessionGapWaitedFull, true)
	}
	if known {
		s.node.probe(ProbeSessionGap)
	} else {
		s.node.probe(ProbeSessionFirstOfRoom)
	}
	// A gap, or the first message of a room this session has not seen:
	// fill from the log, and deliver d only if it is inside a window (a
	// stale relay or a late joiner must not receive it).
	wins, _, err := s.fillLocked(ctx, d.Room, d.Seq-1, ProbeSessionGapWaitedFull, true)
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
	return s.pushWaitLocked(ctx, d, ProbeSessionGapWaitedFull, true)
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
// stream rather than ending the session, as long as the client takes a
// delivery every SlowClientAfter. periodic: a catch-up tick (or a wake-up),
// not the replay after connect.
func (s *session) catchUp(ctx context.Context, room string, periodic bool) error {
	seq, err := s.node.dir.RoomSeq(ctx, room)
	if err != nil {
		return err
	}
	if err := s.acquire(ctx, false); err != nil {
		return err
	}
	defer s.release()
	_, pushed, err := s.fillLocked(ctx, room, seq, ProbeSessionReplayWaitedFull, false)
	if periodic && pushed > 0 {
		s.node.probe(ProbeSessionCatchUpFilled)
	}
	return err
}

// fillLocked delivers the room-log entries after last and up to upto that lie
// inside the user's membership windows, and returns the windows it read
// and how many entries it pushed. It waits for room in the outbox
// (pushWaitLocked, which hits waitProbe when it waits), for replay and
// live gap fills alike: the client sets the pace. live: a live delivery's
// gap fill (see pushWaitLocked).
func (s *session) fillLocked(ctx context.Context, room string, upto uint64, waitProbe string, live bool) ([]Window, int, error) {
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
				if err := s.pushWaitLocked(ctx, d, waitProbe, live); err != nil {
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

// pushWaitLocked queues d, waiting while the outbox is full, until the
// session ends or the wait runs out: SlowClientAfter for a replay or
// catch-up (a client that takes no delivery for that long is too slow,
// and its session ends: ResourceExhausted, it reconnects and resumes from
// its cursor), LivePushWait for a live delivery (live), which then leaves
// d to the session's catch-up (errLeftToCatchUp). A replay or catch-up
// push that has waited LivePushWait marks itself blocked: live
// deliveries leave their messages to the catch-up instead of waiting for
// the lock behind it.
//
// Only the pump takes from out, and only the lock holder puts. The wait
// is a blocking select, so whether it ends with room or with the timer
// does not depend on how goroutines raced: virtual time moves only when
// the bubble is quiet, so a pump that can make room makes it before the
// timer fires. When the timer fires the holder parks at the hooks before
// its last look at the outbox, for the same reason. A wait hits waitProbe
// (and how it ended, its own probe); those counts read len(out), but
// nothing the push does depends on them.
func (s *session) pushWaitLocked(ctx context.Context, d *relaypb.Delivery, waitProbe string, live bool) error {
	if err := s.ended(ctx); err != nil {
		return err
	}
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	default:
	}
	// Counted only (see above).
	waits := len(s.out) == cap(s.out)
	if waits {
		s.node.probe(waitProbe)
	}
	wait := s.node.cfg.SlowClientAfter
	var mark <-chan time.Time
	if live {
		wait = s.node.cfg.LivePushWait
	} else {
		m := time.NewTimer(s.node.cfg.LivePushWait)
		defer m.Stop()
		mark = m.C
	}
	slow := time.NewTimer(wait)
	defer slow.Stop()
	for over := false; !over; {
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
		case <-mark:
			mark = nil
			s.setBlocked(true)
			defer s.setBlocked(false)
		case <-slow.C:
			over = true
		}
	}
	s.node.hooks.Gate(ctx, Point{Node: s.node.cfg.NodeID, Kind: PointSessionLock, Key: fmt.Sprintf("%s #%d %s %s#%d push-wait-over", s.user, s.gen, Label(ctx), d.Room, d.Seq)})
	if err := s.ended(ctx); err != nil {
		return err
	}
	select {
	case s.out <- d:
		s.last[d.Room] = d.Seq
		return nil
	default:
	}
	if live {
		s.node.probe(ProbeSessionLiveLeftFull)
		return errLeftToCatchUp
	}
	s.node.probe(ProbeSessionSlowConsumer)
	s.close(status.Errorf(codes.ResourceExhausted, "client %s too slow: took no delivery for %v (%d pending)", s.user, wait, len(s.out)))
	return s.err()
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

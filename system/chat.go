package system

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// chatServer is the client-facing service.
type chatServer struct {
	relaypb.UnimplementedChatServer
	n *Node
}

func (c *chatServer) CreateRoom(ctx context.Context, req *relaypb.CreateRoomRequest) (*relaypb.CreateRoomResponse, error) {
	if err := c.n.checkName("room", req.GetRoom()); err != nil {
		return nil, err
	}
	ctx = WithLabel(ctx, "create "+req.Room+attemptSuffix(ctx))
	created, err := c.n.dir.CreateRoom(ctx, req.Room)
	if err != nil {
		return nil, dirStatus(err)
	}
	return &relaypb.CreateRoomResponse{Created: created}, nil
}

func (c *chatServer) Join(ctx context.Context, req *relaypb.JoinRequest) (*relaypb.JoinResponse, error) {
	if err := c.n.checkRoomUser(req.GetRoom(), req.GetUser()); err != nil {
		return nil, err
	}
	ctx = WithLabel(ctx, "join "+req.Room+" "+req.User+attemptSuffix(ctx))
	from, err := c.n.dir.Join(ctx, req.Room, req.User)
	if err != nil {
		return nil, dirStatus(err)
	}
	return &relaypb.JoinResponse{FromSeq: from}, nil
}

func (c *chatServer) Leave(ctx context.Context, req *relaypb.LeaveRequest) (*relaypb.LeaveResponse, error) {
	if err := c.n.checkRoomUser(req.GetRoom(), req.GetUser()); err != nil {
		return nil, err
	}
	ctx = WithLabel(ctx, "leave "+req.Room+" "+req.User+attemptSuffix(ctx))
	to, err := c.n.dir.Leave(ctx, req.Room, req.User)
	if err != nil {
		return nil, dirStatus(err)
	}
	return &relaypb.LeaveResponse{ToSeq: to}, nil
}

// Send sequences the message, submits its fan-out to the executor and acks
// with the seq. Submission happens before the ack so that a saturated pool's
// caller-runs policy slows the sender, as in the seeds; the tasks run under
// the node's context, not the call's.
func (c *chatServer) Send(ctx context.Context, req *relaypb.SendRequest) (*relaypb.SendResponse, error) {
	n := c.n
	if err := c.n.checkRoomUser(req.GetRoom(), req.GetUser()); err != nil {
		return nil, err
	}
	if err := n.checkName("client_msg_id", req.GetClientMsgId()); err != nil {
		return nil, err
	}
	if len(req.Payload) == 0 {
		n.probe(ProbeChatEmptyPayload)
		return nil, status.Error(codes.InvalidArgument, "empty payload")
	}
	if len(req.Payload) > n.cfg.MaxPayload {
		n.probe(ProbeChatPayloadOverLimit)
		return nil, status.Errorf(codes.InvalidArgument, "payload of %d bytes exceeds the limit of %d", len(req.Payload), n.cfg.MaxPayload)
	}
	ctx = WithLabel(ctx, "send "+req.Room+" "+req.ClientMsgId+attemptSuffix(ctx))
	sq, err := n.dir.Append(ctx, req.Room, req.ClientMsgId, req.User, req.Payload)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotMember):
			n.probe(ProbeChatNotMember)
		case errors.Is(err, ErrUnknownRoom):
			n.probe(ProbeChatUnknownRoom)
		}
		return nil, dirStatus(err)
	}
	msg := &relaypb.RelayedMessage{Room: req.Room, Seq: sq.Seq, MsgId: req.ClientMsgId, Sender: req.User, Payload: req.Payload, Origin: n.cfg.NodeID}
	resp := &relaypb.SendResponse{Seq: sq.Seq, Duplicate: sq.Duplicate}
	if sq.Duplicate && !n.cfg.Legacy.Idempotency {
		// A duplicate is the message its seq holds, never the retry's
		// content (which may differ): fan out what the log says.
		o := sq.Original
		if o == nil {
			n.probe(ProbeChatDuplicateLost)
			return resp, nil // nothing to re-deliver: the catch-up reads the log
		}
		n.probe(ProbeChatDuplicateSend)
		msg.MsgId, msg.Sender, msg.Payload = o.MsgID, o.Sender, o.Payload
	}
	n.dispatch(msg, sq.Members, sq.Duplicate)
	return resp, nil
}

// Connect registers the user's session, routes the user here, replays what
// the client missed after its cursors and then streams live deliveries.
func (c *chatServer) Connect(req *relaypb.ConnectRequest, stream relaypb.Chat_ConnectServer) error {
	n := c.n
	if err := n.checkName("user", req.GetUser()); err != nil {
		return err
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		n.probe(ProbeChatConnectStopping)
		return status.Error(codes.Unavailable, "node stopping")
	}
	n.gen++
	s := newSession(n, req.User, n.gen, req.Cursors)
	n.streams++
	n.mu.Unlock()
	defer n.streamEnded()

	ctx := WithLabel(n.ctx, fmt.Sprintf("connect %s #%d", req.User, s.gen))
	// Registered before the route is written: a failed open must unregister
	// the session too.
	defer n.closeSession(ctx, s)
	if err := n.openSession(ctx, s); err != nil {
		return err
	}
	// The header tells the client its session is registered: a client that
	// waits for it never cancels a stream the node has half accepted.
	if err := stream.SendHeader(metadata.Pairs(MDSession, strconv.FormatUint(s.gen, 10))); err != nil {
		return err
	}
	// Replay and periodic catch-up run beside the pump so a long backlog
	// streams out instead of overflowing the outbox; live deliveries wait on
	// the session lock.
	replayed := make(chan struct{})
	go func() {
		defer close(replayed)
		n.syncLoop(ctx, s)
	}()
	err := n.pump(stream, s)
	s.close(status.Error(codes.Canceled, "stream ended"))
	<-replayed
	return err
}

// pump writes the session's deliveries to the stream until either ends.
func (n *Node) pump(stream relaypb.Chat_ConnectServer, s *session) error {
	for {
		// An ended session or stream wins over a pending delivery whichever
		// became ready first: a select picks at random among ready cases,
		// and what the pump does must not depend on that.
		if err := pumpEnded(stream, s); err != nil {
			return err
		}
		select {
		case d := <-s.out:
			if err := pumpEnded(stream, s); err != nil {
				return err
			}
			n.hooks.Gate(n.ctx, Point{Node: n.cfg.NodeID, Kind: PointSessionSend, Key: fmt.Sprintf("%s #%d %s#%d", s.user, s.gen, d.Room, d.Seq)})
			if err := stream.Send(d); err != nil {
				return err
			}
		case <-s.done:
		case <-stream.Context().Done():
		}
	}
}

// pumpEnded returns the status to end the stream with once the session or
// the stream is over, else nil.
func pumpEnded(stream relaypb.Chat_ConnectServer, s *session) error {
	select {
	case <-s.done:
		return sessionStatus(s.err())
	default:
	}
	if err := stream.Context().Err(); err != nil {
		return err
	}
	return nil
}

func sessionStatus(err error) error {
	if _, ok := status.FromError(err); ok && err != nil {
		return err
	}
	return status.Errorf(codes.Unavailable, "session ended: %v", err)
}

func (n *Node) streamEnded() {
	n.mu.Lock()
	n.streams--
	n.mu.Unlock()
}

// openSession makes s the user's session here (replacing an older one) and
// points the user's route at this node.
func (n *Node) openSession(ctx context.Context, s *session) error {
	n.hooks.Gate(ctx, Point{Node: n.cfg.NodeID, Kind: PointSessionOpen, Key: fmt.Sprintf("%s #%d", s.user, s.gen)})
	n.mu.Lock()
	if n.stopped {
		// Stop closes the sessions it finds; one registered after that
		// would keep GracefulStop waiting.
		n.mu.Unlock()
		n.probe(ProbeChatConnectStopping)
		return status.Error(codes.Unavailable, "node stopping")
	}
	old := n.sessions[s.user]
	n.sessions[s.user] = s
	n.mu.Unlock()
	if old != nil {
		n.probe(ProbeChatSessionReplaced)
		old.close(status.Error(codes.Aborted, "replaced by a newer connection"))
	}
	n.hooks.Observe(SessionEvent{Node: n.cfg.NodeID, User: s.user, Open: true})
	if err := n.dir.SetRoute(ctx, s.user, n.cfg.NodeID, n.epoch, s.gen, n.cfg.RouteTTL); err != nil {
		return status.Errorf(codes.Unavailable, "route %s: %v", s.user, err)
	}
	return nil
}

// closeSession unregisters s and drops the user's route if it is still ours.
func (n *Node) closeSession(ctx context.Context, s *session) {
	s.close(status.Error(codes.Canceled, "stream ended"))
	n.hooks.Gate(ctx, Point{Node: n.cfg.NodeID, Kind: PointSessionClose, Key: fmt.Sprintf("%s #%d", s.user, s.gen)})
	// The route goes first, the registration last, with nothing that blocks
	// between it and the handler's return: a session is registered exactly
	// while its stream is open.
	if n.localSession(s.user) == s {
		_ = n.dir.DropRoute(ctx, s.user, n.cfg.NodeID, n.epoch, s.gen)
	}
	n.mu.Lock()
	if n.sessions[s.user] == s {
		delete(n.sessions, s.user)
	}
	n.mu.Unlock()
	n.ending.Add(-1)
	n.hooks.Observe(SessionEvent{Node: n.cfg.NodeID, User: s.user, Reason: fmt.Sprint(s.err())})
}

// syncLoop replays what the client missed, then catches up from the room
// logs every CatchUpInterval until the session ends. Live pushes are an
// optimisation: a relay that was lost, or a push that went to a stale
// session of the same user on another node (a client that vanished and
// reconnected elsewhere before its old stream was reaped), is made good by
// the next catch-up even if the room stays silent.
func (n *Node) syncLoop(ctx context.Context, s *session) {
	if err := n.replay(ctx, s, false); err != nil {
		n.probe(ProbeChatReplayFailed)
		s.close(err)
		return
	}
	t := time.NewTicker(n.cfg.CatchUpInterval)
	defer t.Stop()
	for tick := 1; ; tick++ {
		// A live delivery that could not be made within LiveLockWait
		// wakes the catch-up at once (wakeCatchUp): it waits for the
		// client here, on the session's own goroutine, never on an
		// executor worker or in a relay handler. A tick and a wake-up
		// both ready take two passes, whichever the select picks first.
		// An ended session ends the loop before it looks at either.
		if s.isClosed() {
			return
		}
		select {
		case <-s.done:
			return
		case <-t.C:
		case <-s.kick:
			n.probe(ProbeSessionCatchUpWoken)
		}
		tctx := WithLabel(n.ctx, fmt.Sprintf("sync %s #%d tick%d", s.user, s.gen, tick))
		if err := n.replay(tctx, s, true); err != nil && n.ctx.Err() != nil {
			return
		}
	}
}

// replay delivers, room by room, what the user missed after its cursors
// (periodic: at a catch-up tick).
func (n *Node) replay(ctx context.Context, s *session, periodic bool) error {
	rooms, err := n.dir.UserRooms(ctx, s.user)
	if err != nil {
		return status.Errorf(codes.Unavailable, "replay for %s: %v", s.user, err)
	}
	for _, r := range rooms {
		if err := s.catchUp(ctx, r, periodic); err != nil {
			return status.Errorf(codes.Unavailable, "replay %s for %s: %v", r, s.user, err)
		}
	}
	return nil
}

// dirStatus maps directory errors to gRPC status codes.
func dirStatus(err error) error {
	switch {
	case errors.Is(err, ErrUnknownRoom):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrNotMember):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Errorf(codes.Unavailable, "directory: %v", err)
}

// MaxNameLen is the longest room, user or message-id name, in bytes.
const MaxNameLen = 128

const maxNameLen = MaxNameLen

// validName is the rule for room, user and message-id names: 1 to
// maxNameLen bytes of valid UTF-8, without a control character, a space of
// any script, an invisible character (invisible) or ':' (the separator of
// Redis keys). Any other letter of any script is allowed: names travel in
// protobuf strings, and in metadata only escaped (opValue).
func validName(what, s string) error {
	if s == "" {
		return status.Errorf(codes.InvalidArgument, "%s is required", what)
	}
	if len(s) > maxNameLen {
		return status.Errorf(codes.InvalidArgument, "%s longer than %d bytes", what, maxNameLen)
	}
	if !utf8.ValidString(s) {
		return status.Errorf(codes.InvalidArgument, "%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if r <= ' ' || r == ':' || unicode.IsControl(r) || unicode.IsSpace(r) {
			return status.Errorf(codes.InvalidArgument, "%s %q contains a space, control character or ':'", what, s)
		}
		if invisible(r) {
			return status.Errorf(codes.InvalidArgument, "%s %q contains an invisible character (%U)", what, s, r)
		}
	}
	return nil
}

// invisible reports whether r renders as nothing, so that a name holding
// it displays as another name ("alice" and "alice" + U+200B): a Unicode
// format character (category Cf: zero-width space and joiners,
// direction overrides, the byte order mark, the soft hyphen, tags) or
// another default-ignorable code point (Other_Default_Ignorable_Code_Point:
// Hangul fillers, the combining grapheme joiner). Variation selectors
// stay allowed: emoji need them. Refusing Cf refuses the zero-width
// joiner of emoji sequences too.
func invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// legacyValidName is the rule of builds before validName's (Legacy.Names):
// bytes above 0x7f pass unchecked.
func legacyValidName(what, s string) error {
	if s == "" {
		return status.Errorf(codes.InvalidArgument, "%s is required", what)
	}
	if len(s) > maxNameLen {
		return status.Errorf(codes.InvalidArgument, "%s longer than %d bytes", what, maxNameLen)
	}
	for _, r := range s {
		if r <= ' ' || r == ':' || r == 0x7f {
			return status.Errorf(codes.InvalidArgument, "%s %q contains a space, control character or ':'", what, s)
		}
	}
	return nil
}

// checkName applies the node's name rule.
func (n *Node) checkName(what, s string) error {
	check := validName
	if n.cfg.Legacy.Names {
		check = legacyValidName
	}
	err := check(what, s)
	if err != nil {
		n.probe(ProbeChatBadName)
	}
	return err
}

func (n *Node) checkRoomUser(room, user string) error {
	if err := n.checkName("room", room); err != nil {
		return err
	}
	return n.checkName("user", user)
}

// attemptSuffix names a retried call's attempt (" a2", " a3", ...) from its
// x-relay-attempt metadata, so that the operation label of a retry differs
// from the first try's, which may still be in progress on this node (a
// paused node, a slow Redis): labels name one logical operation each.
func attemptSuffix(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if a := md.Get(MDAttempt); len(a) == 1 && a[0] != "1" {
		return " a" + a[0]
	}
	return ""
}

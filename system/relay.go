package system

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Metadata keys of node-to-node calls.
const (
	MDToken   = "x-relay-token"   // the cluster credential
	MDOp      = "x-op"            // the sender's operation label
	MDAttempt = "x-relay-attempt" // 1 for the first try
	// MDIncarnation names the sending process on its relay streams (its
	// start time): two incarnations that Redis gave the same epoch (it
	// lost the increments between them) name their links alike.
	MDIncarnation = "x-relay-incarnation"
	MDSession     = "x-session" // Connect's response header: the session is registered
)

// authUnary rejects relay calls that lack the cluster credential.
func (n *Node) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !strings.HasPrefix(info.FullMethod, "/"+relaypb.Relay_ServiceDesc.ServiceName+"/") {
		return h(ctx, req)
	}
	if err := n.checkToken(ctx); err != nil {
		return nil, err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if op := md.Get(MDOp); len(op) == 1 {
		ctx = WithLabel(ctx, "recv "+n.opLabel(op[0])+attemptSuffix(ctx))
	}
	return h(ctx, req)
}

// authStream is authUnary for the relay's streams.
func (n *Node) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if strings.HasPrefix(info.FullMethod, "/"+relaypb.Relay_ServiceDesc.ServiceName+"/") {
		if err := n.checkToken(ss.Context()); err != nil {
			return err
		}
	}
	return h(srv, ss)
}

func (n *Node) checkToken(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	tok := md.Get(MDToken)
	if len(tok) != 1 || subtle.ConstantTimeCompare([]byte(tok[0]), []byte(n.cfg.ClusterToken)) != 1 {
		return status.Error(codes.Unauthenticated, "relay call without a valid cluster credential")
	}
	return nil
}

// relayServer receives relays from other nodes and delivers them to local
// sessions, in the order given. A recipient who is not local is not an
// error: the user catches up from the room log.
type relayServer struct {
	relaypb.UnimplementedRelayServer
	n *Node
}

func (r *relayServer) RelayMessage(ctx context.Context, req *relaypb.RelayMessageRequest) (*relaypb.RelayMessageResponse, error) {
	if err := r.check(req.GetMessage(), req.GetTargetEpoch(), 1); err != nil {
		return nil, err
	}
	if err := r.n.checkName("recipient", req.GetRecipient()); err != nil {
		return nil, err
	}
	return r.n.deliverLocal(ctx, req.Message, []string{req.Recipient}), nil
}

func (r *relayServer) RelayBulkMessage(ctx context.Context, req *relaypb.RelayBulkMessageRequest) (*relaypb.RelayMessageResponse, error) {
	if r.n.cfg.Protocol < ProtocolV2 {
		r.n.probe(ProbeRelayRecvUnsupported)
		return nil, status.Errorf(codes.Unimplemented, "relay protocol v%d has no RelayBulkMessage", r.n.cfg.Protocol)
	}
	if err := r.check(req.GetMessage(), req.GetTargetEpoch(), len(req.GetRecipients())); err != nil {
		return nil, err
	}
	for _, u := range req.Recipients {
		if err := r.n.checkName("recipient", u); err != nil {
			return nil, err
		}
	}
	return r.n.deliverLocal(ctx, req.Message, req.Recipients), nil
}

// check validates a relay before anything is delivered.
func (r *relayServer) check(m *relaypb.RelayedMessage, epoch uint64, recipients int) error {
	n := r.n
	switch {
	case m == nil:
		return status.Error(codes.InvalidArgument, "relay without a message")
	case m.Seq == 0:
		return status.Error(codes.InvalidArgument, "relay without a seq")
	case len(m.Payload) == 0:
		return status.Error(codes.InvalidArgument, "empty payload")
	case len(m.Payload) > n.cfg.MaxPayload:
		n.probe(ProbeRelayRecvOverLimit)
		return status.Errorf(codes.InvalidArgument, "payload of %d bytes exceeds the limit of %d", len(m.Payload), n.cfg.MaxPayload)
	case recipients == 0:
		return status.Error(codes.InvalidArgument, "relay without recipients")
	case recipients > n.cfg.MaxRecipients:
		n.probe(ProbeRelayRecvOverLimit)
		return status.Errorf(codes.InvalidArgument, "%d recipients exceed the limit of %d", recipients, n.cfg.MaxRecipients)
	case epoch != 0 && epoch != n.epoch:
		n.probe(ProbeRelayRecvStaleEpoch)
		return status.Errorf(codes.FailedPrecondition, "relay for %s epoch %d reached epoch %d", n.cfg.NodeID, epoch, n.epoch)
	}
	return n.checkName("room", m.Room)
}

// deliverLocal hands m to each recipient's local session.
func (n *Node) deliverLocal(ctx context.Context, m *relaypb.RelayedMessage, users []string) *relaypb.RelayMessageResponse {
	resp := &relaypb.RelayMessageResponse{}
	for _, u := range users {
		s := n.localSession(u)
		if s == nil {
			n.probe(ProbeRelayRecvNotLocal)
			resp.NotLocal++
			continue
		}
		if err := s.deliver(ctx, delivery(m)); err != nil {
			resp.NotLocal++
			continue
		}
		resp.Delivered++
	}
	return resp
}

func delivery(m *relaypb.RelayedMessage) *relaypb.Delivery {
	return &relaypb.Delivery{Room: m.Room, Seq: m.Seq, MsgId: m.MsgId, Sender: m.Sender, Payload: m.Payload}
}

// relay sends m to recipients on server in the best mode that mode allows
// and the peer speaks, retrying transient failures. A relay that finally
// fails is dropped: the recipients catch up from the log. After the last
// attempt it returns at once: no registry read and no back-off holding the
// executor worker for nothing. A peer that answers Unimplemented is
// remembered to speak less (until its epoch changes) and the relay is made
// again at once in the older mode: recipients already reached are not
// relayed to again.
func (n *Node) relay(ctx context.Context, server string, recipients []string, m *relaypb.RelayedMessage, mode Mode) {
	for attempt := 1; attempt <= n.cfg.RelayAttempts; attempt++ {
		how, reached, err := n.relayOnce(ctx, server, recipients, m, mode, attempt)
		n.hooks.Observe(RelayEvent{Node: n.cfg.NodeID, Target: server, Room: m.Room, Seq: m.Seq, Recipients: len(recipients), Mode: how, Bulk: how != ModeSingle, Attempt: attempt, Err: err})
		recipients = recipients[reached:]
		if status.Code(err) == codes.Unimplemented && how != ModeSingle {
			n.probe(ProbeRelayFallback)
			attempt-- // an older peer, not a failure: fall back at once
			continue
		}
		if err != nil && retryable(err) && !errors.Is(err, errLinkFull) && ctx.Err() == nil && attempt == n.cfg.RelayAttempts {
			n.probe(ProbeRelayGaveUp)
		}
		if err == nil || !retryable(err) || errors.Is(err, errLinkFull) || ctx.Err() != nil || attempt == n.cfg.RelayAttempts {
			return
		}
		n.probe(ProbeRelayRetried)
		// React on the incarnation this attempt used, not on whatever is
		// current by now.
		var used *attemptError
		epoch := uint64(0)
		if errors.As(err, &used) {
			epoch = used.epoch
		}
		switch {
		case status.Code(err) == codes.FailedPrecondition || errors.Is(err, ErrUnknownNode):
			if errors.Is(err, ErrUnknownNode) {
				n.probe(ProbeRelayUnknownNode)
			} else {
				n.probe(ProbeRelayStaleEpoch)
			}
			n.peers.forget(server, epoch)
		case status.Code(err) == codes.Unavailable:
			n.peers.refresh(ctx, server, epoch)
		}
		select {
		case <-time.After(time.Duration(attempt) * n.cfg.RelayBackoff):
		case <-ctx.Done():
			return
		}
	}
}

// attemptError is a relay attempt that failed on the connections to one
// incarnation (epoch) of the peer.
type attemptError struct {
	epoch uint64
	err   error
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// relayOnce makes one relay attempt and says in which mode, and how many
// of the recipients (from the first) it reached. An error from the peer's
// connections is an *attemptError naming the epoch they lead to. A
// stream-mode relay only queues the message on the peer's link (its writer
// retries on its own). In single mode each recipient gets its own call.
func (n *Node) relayOnce(ctx context.Context, server string, recipients []string, m *relaypb.RelayedMessage, mode Mode, attempt int) (Mode, int, error) {
	p, err := n.peers.get(ctx, server)
	if err != nil {
		return mode, 0, err
	}
	mode = ModeFor(mode, n.cfg.Protocol, p.speaks())
	if mode == ModeStream {
		return mode, 0, p.linkFor(m.Room).enqueue(ctx, m, recipients)
	}
	cc := p.conn(m.Room, m.Seq, recipients[0])
	if cc == nil {
		// Replaced or forgotten since get returned it: retry on whatever
		// is current by the next attempt.
		n.probe(ProbeRelayPeerReplaced)
		return mode, 0, &attemptError{epoch: p.epoch, err: status.Errorf(codes.Unavailable, "relay %s#%d to %s: connections to epoch %d closed", m.Room, m.Seq, server, p.epoch)}
	}
	client := relaypb.NewRelayClient(cc)
	reached := 0
	if mode == ModeBulk {
		err = n.relayCall(ctx, attempt, func(ctx context.Context) error {
			_, err := client.RelayBulkMessage(ctx, &relaypb.RelayBulkMessageRequest{Message: m, Recipients: recipients, TargetEpoch: p.epoch})
			return err
		})
	} else {
		for _, u := range recipients {
			err = n.relayCall(ctx, attempt, func(ctx context.Context) error {
				_, err := client.RelayMessage(ctx, &relaypb.RelayMessageRequest{Message: m, Recipient: u, TargetEpoch: p.epoch})
				return err
			})
			if err != nil {
				break
			}
			reached++
		}
	}
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			if p.downgrade(mode.Protocol() - 1) {
				n.probe(ProbePeerDowngraded)
			}
		}
		return mode, reached, &attemptError{epoch: p.epoch, err: fmt.Errorf("relay %s#%d to %s: %w", m.Room, m.Seq, server, err)}
	}
	return mode, reached, nil
}

// relayCall makes one relay call with the attempt's deadline and metadata.
func (n *Node) relayCall(ctx context.Context, attempt int, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.RelayTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, MDToken, n.cfg.ClusterToken, MDOp, n.opValue(Label(ctx)), MDAttempt, strconv.Itoa(attempt))
	return f(ctx)
}

// opValue makes an operation label fit for the x-op metadata value, which
// gRPC refuses (client-side, Internal, before anything is sent) unless it
// is printable ASCII: a label names rooms and users, which may be named in
// any script. Every byte outside printable ASCII, and '%', is
// percent-encoded, so a label of printable ASCII without '%' is sent as
// it is and opLabel restores any label exactly. Legacy.Names sends it raw.
func (n *Node) opValue(label string) string {
	if n.cfg.Legacy.Names {
		return label
	}
	return escapeOp(label)
}

// opLabel decodes a received x-op value (Legacy.Names: takes it raw).
func (n *Node) opLabel(v string) string {
	if n.cfg.Legacy.Names {
		return v
	}
	return unescapeOp(v)
}

func opByteSafe(b byte) bool { return b >= 0x20 && b < 0x7f && b != '%' }

func escapeOp(s string) string {
	i := 0
	for i < len(s) && opByteSafe(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if c := s[i]; opByteSafe(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// unescapeOp undoes escapeOp; a value it cannot decode (a peer that sends
// labels raw) is taken as it is.
func unescapeOp(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			out = append(out, s[i])
			continue
		}
		if i+2 >= len(s) {
			return s
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return s
		}
		out = append(out, byte(v))
		i += 2
	}
	return string(out)
}

// retryable: transport trouble, a timeout, a stale epoch (after which the
// registry is read again), or a connection closed under the call because the
// peer was replaced (Canceled while the relay's own context is live: relay
// checks that first). Status codes are read through the %w wrapping of
// relayOnce.
func retryable(err error) bool {
	if errors.Is(err, ErrUnknownNode) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.FailedPrecondition, codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

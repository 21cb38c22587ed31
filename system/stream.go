package system

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Stream mode (relay protocol v3). Each peer channel has a link: a writer
// goroutine that owns one long-lived RelayStream at a time and writes the
// link's items on it one after another, without a response each (seed
// grpc-streaming-patterns: unidirectional writes). Relay tasks only queue
// an item and return, so a peer that stops reading (flow control) never
// pins an executor worker; the writer alone waits, for at most RelayTimeout
// per write before it breaks the stream.
//
// Items are numbered per link (link_seq). The sender closes a stream after
// StreamBatch items or StreamLinger, and the receiver's single response
// acknowledges every item up to a link_seq, cumulatively. Items written but
// not acknowledged stay with the sender: after a broken stream they are
// written again on the next one, and the receiver drops those it already
// processed, so a break neither loses nor duplicates a relay. A link ends
// with its peer incarnation (restart, vanish, node stop): its stream is
// cancelled, and whatever it still held is dropped — recipients catch up
// from the room log, as after any failed relay.

// PointStreamWrite: a link's writer is about to take its queued items and
// write them (or to retry after a broken stream).
const PointStreamWrite = "stream.write"

// StreamEvent is observed when something happens to a link's stream.
type StreamEvent struct {
	Node   string
	Target string
	Link   string
	// What: "open", "ack" (closed with a cumulative ack), "broken" (a write
	// or the close failed), "drop" (items given up: attempts exhausted or
	// the node stopping), "fallback" (the peer does not speak v3: items
	// relayed again in bulk), "isolate" (the peer refused an item: items
	// relayed again one by one in bulk, so the refusal costs that item
	// alone), "handover" (the peer restarted or vanished: items relayed
	// again to its current incarnation).
	What  string
	Items int    // items written on the stream, or dropped
	Acked uint64 // the ack's link seq
	Err   error
}

// link is one peer channel's relay stream.
type link struct {
	n    *Node
	p    *peer
	ch   int
	name string // sender node @ epoch # channel: the receiver's dedup key
	wake chan struct{}
	done chan struct{}

	mu      sync.Mutex
	queue   []*relaypb.RelayStreamItem // waiting to be written
	closed  bool
	running bool // the writer was started
	// held is len(unacked), for enqueue's bound on the backlog (queued
	// plus unacknowledged): the writer updates it as unacked changes.
	held int

	// Owned by the writer goroutine.
	next    uint64                     // link seq of the next queued item
	unacked []*relaypb.RelayStreamItem // written, not yet acknowledged
	streams int                        // streams opened, for operation labels
}

func newLink(n *Node, p *peer, gen uint64, ch int) *link {
	return &link{
		n: n, p: p, ch: ch,
		name: fmt.Sprintf("%s@%d.%d#%d", n.cfg.NodeID, n.epoch, gen, ch),
		wake: make(chan struct{}, 1), done: make(chan struct{}), next: 1,
	}
}

// linkFor picks the channel of a room: every message of a room to one peer
// goes through the same stream, in seq order.
func (p *peer) linkFor(room string) *link {
	if len(p.links) == 1 {
		return p.links[0]
	}
	h := fnv.New32a()
	h.Write([]byte(room))
	return p.links[int(h.Sum32()%uint32(len(p.links)))]
}

// deferredWakes, in a context, collects the links enqueue queued on
// instead of waking their writers: a goroutine that queues several items
// in a row without waiting in between (handover) wakes each writer once,
// after the last. Woken at the first, a writer would run beside the
// queuing and take a wake-up or not depending on which goroutine ran
// first: a spurious write step in some runs only.
type deferredWakes struct{ links []*link }

type deferredWakesKey struct{}

// errLinkFull marks a relay refused by a link whose backlog is at its
// bound: relay does not retry it (a retry would hold an executor worker
// for a link that is not draining); its recipients catch up from the log.
var errLinkFull = errors.New("link backlog full")

// enqueue queues a relay on the link and wakes its writer (or, under
// deferredWakes in ctx, leaves that to the caller). It never blocks: a
// link already holding StreamBacklog items (queued plus unacknowledged),
// or StreamQueue queued, refuses the relay at once.
func (l *link) enqueue(ctx context.Context, m *relaypb.RelayedMessage, recipients []string) error {
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		l.n.probe(ProbeStreamLinkClosed)
		return status.Errorf(codes.Unavailable, "relay %s#%d to %s: link %s closed", m.Room, m.Seq, l.p.server, l.name)
	case len(l.queue) >= l.n.cfg.StreamQueue || len(l.queue)+l.held >= l.n.cfg.StreamBacklog:
		q, h := len(l.queue), l.held
		l.mu.Unlock()
		l.n.probe(ProbeStreamBacklogFull)
		return fmt.Errorf("relay %s#%d to %s: link %s holds %d queued and %d unacknowledged items (bounds %d queued, %d in all): %w",
			m.Room, m.Seq, l.p.server, l.name, q, h, l.n.cfg.StreamQueue, l.n.cfg.StreamBacklog,
			errors.Join(errLinkFull, status.Error(codes.ResourceExhausted, "link backlog full")))
	}
	l.queue = append(l.queue, &relaypb.RelayStreamItem{Message: m, Recipients: recipients, TargetEpoch: l.p.epoch, Link: l.name})
	if d, ok := ctx.Value(deferredWakesKey{}).(*deferredWakes); ok {
		l.mu.Unlock()
		if !slices.Contains(d.links, l) {
			d.links = append(d.links, l)
		}
		return nil
	}
	l.mu.Unlock()
	l.wakeWriter()
	return nil
}

// wakeWriter starts the link's writer if it is not running, and wakes it.
func (l *link) wakeWriter() {
	l.mu.Lock()
	start := !l.running
	l.running = true
	l.mu.Unlock()
	if start {
		l.n.peers.writers.Add(1)
		go func() {
			defer l.n.peers.writers.Done()
			l.run()
		}()
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// close ends the link; its writer exits (cancelling any stream) and what
// it held is dropped.
func (l *link) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.done)
}

// stream is the writer's current RelayStream.
type relayStream struct {
	s       relaypb.Relay_RelayStreamClient
	cancel  context.CancelFunc
	written int
	linger  <-chan time.Time
	stop    func() bool
	expired bool // linger fired
}

func (l *link) run() {
	var cur *relayStream
	defer func() {
		if cur != nil {
			cur.stop()
			cur.cancel()
		}
	}()
	failures := 0
	var retry <-chan time.Time
	for {
		if retry != nil {
			// Backing off after a broken stream: new traffic only queues
			// (its wake-up waits), it must not spend the next attempt
			// early, or a blip shorter than the back-off would use up
			// every attempt within milliseconds and drop the backlog.
			select {
			case <-l.done:
			case <-retry:
			}
			retry = nil
		} else {
			var linger <-chan time.Time
			if cur != nil {
				linger = cur.linger
			}
			select {
			case <-l.done:
			case <-l.wake:
			case <-linger:
				cur.expired = true
			}
		}
		l.n.hooks.Gate(l.n.ctx, Point{Node: l.n.cfg.NodeID, Kind: PointStreamWrite, Key: l.name + " ->" + l.p.server})
		if l.isClosed() {
			l.handover()
			return
		}
		var err error
		var progressed bool
		cur, progressed, err = l.step(cur)
		if err == nil {
			// Only an ack is progress: a step that merely wrote says
			// nothing of the peer, and resetting on it would let a link
			// whose acks keep failing hold, and rewrite, an ever longer
			// backlog without ever giving up.
			if progressed {
				failures = 0
			}
			continue
		}
		failures++
		if cur != nil {
			cur.stop()
			cur.cancel()
			cur = nil
		}
		if l.giveUp(err, failures) {
			failures = 0
			continue
		}
		retry = time.After(time.Duration(failures) * l.n.cfg.RelayBackoff)
	}
}

func (l *link) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// step writes what is queued (after what a broken stream left unacked) and
// closes the stream for its ack when it is full or has lingered. It
// reports whether an ack made progress.
func (l *link) step(cur *relayStream) (*relayStream, bool, error) {
	l.mu.Lock()
	carried := len(l.unacked) // left by a stream that broke (or acked short)
	for _, it := range l.queue {
		it.LinkSeq = l.next
		l.next++
		l.unacked = append(l.unacked, it)
	}
	l.queue = nil
	l.held = len(l.unacked)
	l.mu.Unlock()
	if len(l.unacked) == 0 {
		if cur != nil && cur.written > 0 && lingered(cur) {
			return nil, true, l.ack(cur)
		}
		return cur, false, nil
	}
	if cur == nil {
		var err error
		if cur, err = l.open(); err != nil {
			return nil, false, err
		}
		if carried > 0 {
			l.n.probe(ProbeStreamResent)
		}
	}
	// Items not yet on this stream: all of unacked on a new stream.
	for _, it := range l.unacked[cur.written:] {
		if err := l.write(cur, it); err != nil {
			return cur, false, err
		}
		cur.written++
	}
	// A stream holding the link's whole backlog bound closes for its ack
	// too: until that ack the link refuses every relay (enqueue), so with
	// StreamBacklog below StreamBatch waiting for the linger would hold
	// the link's traffic back for the linger on every batch.
	full := cur.written >= min(l.n.cfg.StreamBatch, l.n.cfg.StreamBacklog)
	if full || lingered(cur) {
		if full {
			l.n.probe(ProbeStreamBatchAck)
		} else {
			l.n.probe(ProbeStreamLingerAck)
		}
		before := len(l.unacked)
		err := l.ack(cur)
		return nil, err == nil && len(l.unacked) < before, err
	}
	return cur, false, nil
}

func lingered(cur *relayStream) bool {
	if !cur.expired {
		select {
		case <-cur.linger:
			cur.expired = true
		default:
		}
	}
	return cur.expired
}

// open starts a new stream on the link's channel.
func (l *link) open() (*relayStream, error) {
	cc := l.p.channel(l.ch)
	if cc == nil {
		return nil, &attemptError{epoch: l.p.epoch, err: status.Errorf(codes.Unavailable, "link %s: connections to %s epoch %d closed", l.name, l.p.server, l.p.epoch)}
	}
	l.streams++
	op := fmt.Sprintf("stream %s ->%s", l.name, l.p.server)
	ctx, cancel := context.WithCancel(WithLabel(l.n.ctx, op))
	ctx = metadata.AppendToOutgoingContext(ctx, MDToken, l.n.cfg.ClusterToken, MDOp, l.n.opValue(op), MDAttempt, strconv.Itoa(l.streams), MDIncarnation, l.n.incarnation)
	s, err := relaypb.NewRelayClient(cc).RelayStream(ctx)
	if err != nil {
		cancel()
		return nil, &attemptError{epoch: l.p.epoch, err: fmt.Errorf("open %s: %w", op, err)}
	}
	t := time.NewTimer(l.n.cfg.StreamLinger)
	l.n.hooks.Observe(StreamEvent{Node: l.n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "open", Items: len(l.unacked)})
	return &relayStream{s: s, cancel: cancel, linger: t.C, stop: t.Stop}, nil
}

// write sends one item; a write that flow control holds for longer than
// RelayTimeout breaks the stream.
func (l *link) write(cur *relayStream, it *relaypb.RelayStreamItem) error {
	watchdog := time.AfterFunc(l.n.cfg.RelayTimeout, cur.cancel)
	err := cur.s.Send(it)
	if !watchdog.Stop() {
		l.n.probe(ProbeStreamWatchdog)
	}
	if err == nil {
		return nil
	}
	if err == io.EOF { // the server ended the stream: its status says why
		_, err = cur.s.CloseAndRecv()
	}
	return &attemptError{epoch: l.p.epoch, err: fmt.Errorf("write %s#%d on %s: %w", it.Message.GetRoom(), it.Message.GetSeq(), l.name, err)}
}

// ack closes the stream and drops the items its response acknowledges.
func (l *link) ack(cur *relayStream) error {
	defer cur.cancel()
	cur.stop()
	watchdog := time.AfterFunc(l.n.cfg.RelayTimeout, cur.cancel)
	resp, err := cur.s.CloseAndRecv()
	if !watchdog.Stop() {
		l.n.probe(ProbeStreamWatchdog)
	}
	if err != nil {
		return &attemptError{epoch: l.p.epoch, err: fmt.Errorf("close %s: %w", l.name, err)}
	}
	held, i := len(l.unacked), 0
	for i < len(l.unacked) && l.unacked[i].LinkSeq <= resp.Acked {
		i++
	}
	if i < cur.written {
		l.n.probe(ProbeStreamPartialAck)
	}
	l.unacked = append([]*relaypb.RelayStreamItem(nil), l.unacked[i:]...)
	l.setHeld()
	l.n.hooks.Observe(StreamEvent{Node: l.n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "ack", Items: cur.written, Acked: resp.Acked})
	if err := l.n.emptyAck(l.name, min(cur.written, held), i); err != nil {
		return &attemptError{epoch: l.p.epoch, err: err}
	}
	return nil
}

// giveUp decides what a broken stream costs: a peer that does not speak
// v3 gets the items again as bulk relays; a peer restarted or gone hands
// them to its current incarnation; a refusal (a non-retryable error) gets
// them again one by one (isolate); the last attempt drops them
// (recipients catch up from the log). It reports whether the link starts
// over with nothing held.
func (l *link) giveUp(err error, failures int) bool {
	n := l.n
	n.hooks.Observe(StreamEvent{Node: n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "broken", Items: len(l.unacked), Err: err})
	n.probe(ProbeStreamBroken)
	code := status.Code(err)
	switch {
	case code == codes.Unimplemented:
		n.probe(ProbeStreamFallback)
		if l.p.downgrade(ProtocolV2) {
			n.probe(ProbePeerDowngraded)
		}
		items := l.takeAll()
		n.hooks.Observe(StreamEvent{Node: n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "fallback", Items: len(items), Err: err})
		for _, it := range items {
			ctx := WithMessage(WithLabel(n.ctx, fmt.Sprintf("fallback %s#%d ->%s", it.Message.Room, it.Message.Seq, l.p.server)), messageOf(it.Message))
			n.relay(ctx, l.p.server, it.Recipients, it.Message, ModeBulk)
		}
		return true
	case code == codes.FailedPrecondition || errors.Is(err, ErrUnknownNode):
		n.peers.forget(l.p.server, l.p.epoch)
	case code == codes.Unavailable:
		n.peers.refresh(WithLabel(n.ctx, fmt.Sprintf("stream %s ->%s refresh", l.name, l.p.server)), l.p.server, l.p.epoch)
	}
	if l.isClosed() {
		return true // the writer hands over and exits at its next turn
	}
	if staleLink(err) {
		// The receiver has seen a newer link of this node than ours, and
		// the registry does not name us at our epoch: we are an older
		// incarnation (still stopping) or an older generation (handed
		// over). Relay the items in bulk, which names no link.
		n.probe(ProbeStreamStaleRefused)
	}
	if errors.Is(err, errNothingAcked) && failures >= n.cfg.RelayAttempts {
		// A receiver that closed our streams cleanly acknowledging
		// nothing, every attempt (an older node that skips the items of a
		// link older than one it saw, without refusing it): relayed again
		// in bulk, not dropped.
		l.isolate(err)
		return true
	}
	if retryable(err) && failures < n.cfg.RelayAttempts {
		return false
	}
	if !retryable(err) {
		l.isolate(err)
		return true
	}
	items := l.takeAll()
	n.hooks.Observe(StreamEvent{Node: n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "drop", Items: len(items), Err: err})
	n.probe(ProbeStreamGaveUp)
	return true
}

// isolate answers a refusal: the receiver ended the stream with an error
// that retrying cannot cure, such as InvalidArgument from a receiver whose
// payload or recipient limit is smaller than ours (during a config
// rollout). A stream's answer does not say which item it refused, and the
// refusal is about that item, not the link: every item the link held is
// relayed again on its own, in bulk (the writer's own calls, like the
// fallback), so the refused one costs itself alone (its recipients are
// owed through the catch-up) and the receiver drops as duplicates those it
// had already processed.
func (l *link) isolate(err error) {
	n := l.n
	items := l.takeAll()
	n.hooks.Observe(StreamEvent{Node: n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "isolate", Items: len(items), Err: err})
	n.probe(ProbeStreamIsolated)
	for _, it := range items {
		ctx := WithLabel(n.ctx, fmt.Sprintf("isolate %s#%d ->%s", it.Message.Room, it.Message.Seq, l.p.server))
		n.relay(ctx, l.p.server, it.Recipients, it.Message, ModeBulk)
	}
}

// handover gives what a closed link held to the peer's current
// incarnation, as new stream relays made by the writer itself (no executor
// task: the fan-out's tasks are done). A closed link of a stopping node
// drops them.
func (l *link) handover() {
	n := l.n
	items := l.takeAll()
	if len(items) == 0 {
		return
	}
	if n.ctx.Err() != nil {
		n.hooks.Observe(StreamEvent{Node: n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "drop", Items: len(items), Err: errNodeStopping})
		n.probe(ProbeStreamDropStopping)
		return
	}
	n.hooks.Observe(StreamEvent{Node: n.cfg.NodeID, Target: l.p.server, Link: l.name, What: "handover", Items: len(items)})
	n.probe(ProbeStreamHandover)
	wakes := &deferredWakes{}
	for _, it := range items {
		ctx := WithMessage(WithLabel(n.ctx, fmt.Sprintf("handover %s#%d ->%s from %s", it.Message.Room, it.Message.Seq, l.p.server, l.name)), messageOf(it.Message))
		n.relay(context.WithValue(ctx, deferredWakesKey{}, wakes), l.p.server, it.Recipients, it.Message, ModeStream)
	}
	for _, to := range wakes.links {
		to.wakeWriter()
	}
}

// takeAll empties the link: the unacked items and the queue.
func (l *link) takeAll() []*relaypb.RelayStreamItem {
	l.mu.Lock()
	items := append(l.unacked, l.queue...)
	l.queue = nil
	l.unacked = nil
	l.held = 0
	l.mu.Unlock()
	return items
}

// setHeld records len(unacked) after the writer changed it.
func (l *link) setHeld() {
	l.mu.Lock()
	l.held = len(l.unacked)
	l.mu.Unlock()
}

// backlog is what the link holds: queued plus unacknowledged items.
func (l *link) backlog() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) + l.held
}

// --- receiver ---

// linkKey names a sender's channel to this node across its incarnations
// and link generations; linkSeen is the newest link seen on it and the
// last item processed.
type linkKey struct {
	origin string
	ch     string
}

type linkSeen struct {
	epoch, gen uint64
	seq        uint64
	// inc is the sender's incarnation (MDIncarnation; "" from a sender
	// that does not say it).
	inc string
}

// reused reports whether l names the same link as cur for another
// incarnation of its sender: Redis gave both the same epoch (it lost the
// increments between them), and the link seqs start again.
func (l linkSeen) reused(cur linkSeen) bool {
	return l.epoch == cur.epoch && l.gen == cur.gen && l.inc != "" && cur.inc != "" && l.inc != cur.inc
}

// newer orders links of one key: by the sender's epoch, then generation.
func (a linkSeen) newer(b linkSeen) bool {
	return a.epoch > b.epoch || a.epoch == b.epoch && a.gen > b.gen
}

// parseLink splits "node@epoch.gen#ch".
func parseLink(s string) (linkKey, linkSeen, error) {
	bad := status.Errorf(codes.InvalidArgument, "bad link %q (want node@epoch.gen#channel)", s)
	at := strings.LastIndexByte(s, '@')
	hash := strings.LastIndexByte(s, '#')
	if at <= 0 || hash < at {
		return linkKey{}, linkSeen{}, bad
	}
	e, g, ok := strings.Cut(s[at+1:hash], ".")
	epoch, err1 := strconv.ParseUint(e, 10, 64)
	gen, err2 := strconv.ParseUint(g, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return linkKey{}, linkSeen{}, bad
	}
	return linkKey{origin: s[:at], ch: s[hash+1:]}, linkSeen{epoch: epoch, gen: gen}, nil
}

// claimed is what the receiver makes of a stream item (claim).
type claimed int

const (
	claimNew       claimed = iota // not processed yet: deliver it
	claimDuplicate                // processed already (a resend): skip it
	claimStale                    // of a link older than the newest seen: refuse the stream
)

// --- links older than the newest seen (issue 30, bug 5) ---
//
// A sender's link is named by its epoch, which Redis gives it. After a
// Redis restore from an older snapshot, or a failover that lost the last
// epoch increments, a restarted sender gets an epoch below one its
// receivers have seen. Its items are then never new to them. Both ends
// must notice, or the link livelocks (the receiver skipping every item
// and acknowledging nothing, the writer rewriting them forever):
// the receiver refuses a stale link's stream (errStaleLink), and the
// writer counts a clean close that acknowledged nothing as a failed
// attempt (emptyAck), so that an older receiver that skips silently
// costs it its attempts, after which it relays the items in bulk.

// staleLinkMsg is in the status message of a stale link's refusal
// (InvalidArgument: a sender of any version isolates the stream's items
// and relays them in bulk; FailedPrecondition would make an older sender
// forget the peer and hand the items over to a new link at once, over and
// over).
const staleLinkMsg = "stale link epoch"

// errStaleLink is the receiver's refusal of an item of link l, older
// than cur, the newest it has seen of the same sender and channel.
func errStaleLink(link string, cur linkSeen) error {
	return status.Errorf(codes.InvalidArgument, "%s: %s is older than epoch %d generation %d of its sender, seen here", staleLinkMsg, link, cur.epoch, cur.gen)
}

// staleLink reports whether err is (or wraps) a receiver's refusal of a
// stale link.
func staleLink(err error) bool {
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.InvalidArgument && strings.Contains(s.Message(), staleLinkMsg)
}

// errNothingAcked is a stream the receiver closed cleanly with nothing
// acknowledged of the items written on it (Aborted: retried).
var errNothingAcked = errors.New("nothing acknowledged")

// emptyAck judges a clean close: a stream that carried items (written)
// and whose ack covered none of them (acked) failed.
func (n *Node) emptyAck(link string, written, acked int) error {
	if written == 0 || acked > 0 {
		return nil
	}
	n.probe(ProbeStreamEmptyAck)
	return errors.Join(errNothingAcked, status.Errorf(codes.Aborted, "close %s: the receiver acknowledged none of %d items", link, written))
}

// claim says whether the item at seq of link l is new (and then records
// it as processed), a duplicate, or of a link older than the newest seen
// on its key: its sender moved on (handed it over, or restarted), or its
// sender's epoch went backwards.
func (n *Node) claim(key linkKey, l linkSeen, seq uint64) (claimed, linkSeen) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.links == nil {
		n.links = map[linkKey]linkSeen{}
	}
	cur, seen := n.links[key]
	switch {
	case seen && cur.newer(l):
		return claimStale, cur
	case seen && l.reused(cur):
		n.probe(ProbeStreamRecvReusedLink) // the later incarnation's: new
	case seen && !l.newer(cur) && seq <= cur.seq:
		n.probe(ProbeStreamRecvDuplicate)
		return claimDuplicate, cur
	}
	l.seq = seq
	n.links[key] = l
	return claimNew, l
}

// rewound settles a link l older than the newest seen on its key: if the
// registry names its sender at l's epoch, the sender's epoch went
// backwards (the newer link was its predecessor's, before Redis lost
// their increments) and l becomes the newest seen, so that its items are
// new again. It reports whether it did. Otherwise l is an older
// incarnation's or generation's, and is refused. One registry read per
// stream that starts on an older link.
func (n *Node) rewound(ctx context.Context, key linkKey, l linkSeen) bool {
	info, err := n.dir.LookupNode(WithLabel(ctx, fmt.Sprintf("recv stream %s@%d.%d#%s registry", key.origin, l.epoch, l.gen, key.ch)), key.origin)
	if err != nil || info.Epoch != l.epoch {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if cur := n.links[key]; !cur.newer(l) {
		return true // settled meanwhile
	}
	n.probe(ProbeStreamEpochRewound)
	n.links[key] = l
	return true
}

// acked is link l's cumulative ack.
func (n *Node) acked(key linkKey, l linkSeen) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cur := n.links[key]; cur.epoch == l.epoch && cur.gen == l.gen && cur.inc == l.inc {
		return cur.seq
	}
	return 0
}

func (r *relayServer) RelayStream(s relaypb.Relay_RelayStreamServer) error {
	n := r.n
	if n.cfg.Protocol < ProtocolV3 {
		n.probe(ProbeRelayRecvUnsupported)
		return status.Errorf(codes.Unimplemented, "relay protocol v%d has no RelayStream", n.cfg.Protocol)
	}
	var key linkKey
	var link linkSeen
	var processed, dups uint32
	var inc string
	if md, ok := metadata.FromIncomingContext(s.Context()); ok {
		if v := md.Get(MDIncarnation); len(v) > 0 {
			inc = v[0]
		}
	}
	for {
		it, err := s.Recv()
		if err == io.EOF {
			return s.SendAndClose(&relaypb.RelayStreamAck{Acked: n.acked(key, link), Processed: processed, Duplicates: dups})
		}
		if err != nil {
			return err
		}
		if err := r.check(it.GetMessage(), it.GetTargetEpoch(), len(it.GetRecipients())); err != nil {
			return err
		}
		k, l, err := parseLink(it.GetLink())
		if err != nil {
			return err
		}
		l.inc = inc
		if processed+dups > 0 && (k != key || l != link) {
			return status.Errorf(codes.InvalidArgument, "one stream carried items of two links (the second: %s)", it.GetLink())
		}
		key, link = k, l
		for _, u := range it.Recipients {
			if err := n.checkName("recipient", u); err != nil {
				return err
			}
		}
		v, cur := n.claim(key, link, it.LinkSeq)
		if v == claimStale && n.rewound(s.Context(), key, link) {
			v, cur = n.claim(key, link, it.LinkSeq)
		}
		switch v {
		case claimStale:
			n.probe(ProbeStreamRecvOlderLink)
			return errStaleLink(it.GetLink(), cur)
		case claimDuplicate:
			dups++
			continue
		}
		// Claimed means processed: the ack covers it and a resend is a
		// duplicate. So the delivery is the node's work, not the stream's:
		// a stream cancelled between the read and the delivery (the
		// sender's next write broke, its watchdog fired) must not make it
		// skip the recipients.
		n.hooks.Gate(s.Context(), Point{Node: n.cfg.NodeID, Kind: PointStreamDeliver, Key: fmt.Sprintf("%s #%d", it.Link, it.LinkSeq), Msg: messageOf(it.Message)})
		// The delivery's Redis commands (a gap fill) work for the item's
		// message, as a unary relay's handler's do: an embedder that
		// watches them (MessageOf) knows which message a failed one cost.
		ctx := WithMessage(WithLabel(n.ctx, fmt.Sprintf("recv stream %s #%d", it.Link, it.LinkSeq)), messageOf(it.Message))
		n.deliverLocal(ctx, it.Message, it.Recipients)
		processed++
	}
}

package system

// Code probes: named conditions at rare, telling places of the relay
// (FoundationDB's CODE_PROBE). A node tells its Prober (Deps.Probes) each
// probe it hits; nil, the default, costs a nil check. Probes say what a run
// reached, never whether it was right: they are not events (Hooks.Observe)
// and change nothing the node does. The simulation counts them per run and
// a sweep names those no run hit (docs/probes.md).

// Prober is told each code probe a node hits. Hit may be called from any
// of the node's goroutines at once; it must not block.
type Prober interface {
	Hit(node, name string)
}

// ProbeInfo describes one code probe.
type ProbeInfo struct {
	Name  string // stable: area.condition
	Desc  string // one line: what hitting it means
	Where string // the file of system/ that holds it
}

// The code probes, one constant each. Names are permanent: docs, CI and
// the mutant catalog name them.
const (
	// executor.go
	ProbeExecQueued        = "executor.task-queued"
	ProbeExecGrewPastCore  = "executor.grew-past-core"
	ProbeExecPoolAtMax     = "executor.pool-at-max"
	ProbeExecCallerRuns    = "executor.caller-runs"
	ProbeExecWorkerRetired = "executor.worker-retired"
	ProbeExecRejected      = "executor.rejected-after-shutdown"
	ProbeExecPanic         = "executor.task-panicked"

	// session.go
	ProbeSessionLockWaited        = "session.lock-waited"
	ProbeSessionDuplicate         = "session.duplicate-dropped"
	ProbeSessionGap               = "session.gap-in-known-room"
	ProbeSessionFirstOfRoom       = "session.first-message-of-room"
	ProbeSessionOutsideWindow     = "session.relay-outside-window"
	ProbeSessionClosedOnDeliver   = "session.deliver-to-closed"
	ProbeSessionSlowConsumer      = "session.slow-consumer-cut"
	ProbeSessionReplayWaitedFull  = "session.replay-waited-full-outbox"
	ProbeSessionGapWaitedFull     = "session.gap-fill-waited-full-outbox"
	ProbeSessionEndedWhileWaiting = "session.ended-while-push-waited"
	ProbeSessionWaitCancelled     = "session.push-wait-cancelled"
	ProbeSessionCatchUpFilled     = "session.catch-up-filled"
	ProbeSessionLockHeldByWait    = "session.live-left-lock-held-by-wait"
	ProbeSessionLockTimedOut      = "session.live-lock-timed-out"
	ProbeSessionLiveLeftFull      = "session.live-left-full-outbox"
	ProbeSessionCatchUpWoken      = "session.catch-up-woken"

	// chat.go
	ProbeChatBadName          = "chat.bad-name-refused"
	ProbeChatPayloadOverLimit = "chat.payload-over-limit"
	ProbeChatEmptyPayload     = "chat.empty-payload"
	ProbeChatDuplicateSend    = "chat.duplicate-from-log"
	ProbeChatDuplicateLost    = "chat.duplicate-log-lost"
	ProbeChatNotMember        = "chat.send-not-member"
	ProbeChatUnknownRoom      = "chat.send-unknown-room"
	ProbeChatSessionReplaced  = "chat.session-replaced"
	ProbeChatConnectStopping  = "chat.connect-while-stopping"
	ProbeChatReplayFailed     = "chat.replay-failed"

	// fanout.go
	ProbeFanoutRouteUnknown = "fanout.route-unknown"
	ProbeFanoutRouteToSelf  = "fanout.stale-route-to-self"
	ProbeFanoutRoutesFailed = "fanout.routes-lookup-failed"

	// relay.go
	ProbeRelayRetried         = "relay.retried"
	ProbeRelayStaleEpoch      = "relay.retry-after-stale-epoch"
	ProbeRelayUnknownNode     = "relay.peer-unregistered"
	ProbeRelayFallback        = "relay.fell-back-older-protocol"
	ProbeRelayGaveUp          = "relay.gave-up"
	ProbeRelayPeerReplaced    = "relay.peer-closed-mid-relay"
	ProbeRelayRecvStaleEpoch  = "relay.recv-stale-epoch"
	ProbeRelayRecvOverLimit   = "relay.recv-over-limit"
	ProbeRelayRecvUnsupported = "relay.recv-unimplemented"
	ProbeRelayRecvNotLocal    = "relay.recv-not-local"

	// stream.go
	ProbeStreamBacklogFull    = "stream.refused-backlog-full"
	ProbeStreamLinkClosed     = "stream.enqueue-link-closed"
	ProbeStreamBroken         = "stream.broken"
	ProbeStreamResent         = "stream.resent-after-break"
	ProbeStreamGaveUp         = "stream.gave-up"
	ProbeStreamFallback       = "stream.fell-back-to-bulk"
	ProbeStreamIsolated       = "stream.isolated-refused-item"
	ProbeStreamHandover       = "stream.handover"
	ProbeStreamDropStopping   = "stream.dropped-node-stopping"
	ProbeStreamLingerAck      = "stream.linger-ack"
	ProbeStreamBatchAck       = "stream.batch-full-ack"
	ProbeStreamPartialAck     = "stream.partial-ack"
	ProbeStreamWatchdog       = "stream.write-watchdog-fired"
	ProbeStreamRecvDuplicate  = "stream.recv-duplicate"
	ProbeStreamRecvOlderLink  = "stream.recv-older-link"
	ProbeStreamEpochRewound   = "stream.epoch-rewound"
	ProbeStreamStaleRefused   = "stream.stale-link-refused"
	ProbeStreamRecvReusedLink = "stream.recv-reused-link"
	ProbeStreamEmptyAck       = "stream.empty-ack"

	// peers.go
	ProbePeerReplaced     = "peers.replaced-by-newer-epoch"
	ProbePeerKeptNewer    = "peers.stale-entry-kept-newer"
	ProbePeerForgetSpared = "peers.forget-spared-newer"
	ProbePeerRereadFailed = "peers.reread-failed-kept-known"
	ProbePeerDowngraded   = "peers.downgraded"
	// ProbePeerNewerAtRewoundEpoch: a restarted peer's entry replaced the
	// known one though its epoch did not move up (Redis lost writes).
	ProbePeerNewerAtRewoundEpoch = "peers.newer-process-at-rewound-epoch"

	// node.go, directory.go
	ProbeNodeHeartbeatFailed     = "node.heartbeat-failed"
	ProbeNodeHeartbeatSuperseded = "node.heartbeat-superseded"
	ProbeNodeDeregisterFailed    = "node.deregister-failed"
	ProbeDirDeregisterSpared     = "directory.deregister-spared"
)

// probes is the registry: every probe, in the order of the constants.
var probes = []ProbeInfo{
	{ProbeExecQueued, "a task waited in the executor's queue: every core worker was busy", "executor.go"},
	{ProbeExecGrewPastCore, "the queue was full: the pool started a worker beyond Core", "executor.go"},
	{ProbeExecPoolAtMax, "a new worker brought the pool to its Max", "executor.go"},
	{ProbeExecCallerRuns, "the pool was saturated: the submitting goroutine ran the task (caller-runs)", "executor.go"},
	{ProbeExecWorkerRetired, "an idle worker above Core retired at its keep-alive", "executor.go"},
	{ProbeExecRejected, "a task was submitted after Shutdown and never ran", "executor.go"},
	{ProbeExecPanic, "a task panicked and was recovered", "node.go"},

	{ProbeSessionLockWaited, "an operation waited for a session's lock another held", "session.go"},
	{ProbeSessionDuplicate, "a live delivery at or below the session's last seq was dropped as a duplicate", "session.go"},
	{ProbeSessionGap, "a live delivery found a gap in a room the session knew: filled from the log first", "session.go"},
	{ProbeSessionFirstOfRoom, "a live delivery was the first of a room the session had not seen", "session.go"},
	{ProbeSessionOutsideWindow, "a live delivery lay outside the user's membership windows: skipped", "session.go"},
	{ProbeSessionClosedOnDeliver, "a live delivery took the lock of a session that had ended", "session.go"},
	{ProbeSessionSlowConsumer, "a push waited SlowClientAfter for outbox room: the slow client's session was cut", "session.go"},
	{ProbeSessionReplayWaitedFull, "a replay or catch-up waited on a full outbox", "session.go"},
	{ProbeSessionGapWaitedFull, "a live push (a gap fill, the message after it, the next seq) waited on a full outbox", "session.go"},
	{ProbeSessionEndedWhileWaiting, "a session ended while a push waited for outbox room", "session.go"},
	{ProbeSessionWaitCancelled, "a push waiting for outbox room was cancelled (node stopping, relay call ended)", "session.go"},
	{ProbeSessionCatchUpFilled, "a periodic catch-up delivered what live pushes had missed", "session.go"},
	{ProbeSessionLockHeldByWait, "a live delivery found the session lock held by a push waiting for the client: left to the catch-up", "session.go"},
	{ProbeSessionLockTimedOut, "a live delivery did not get the session lock within LiveLockWait: left to the catch-up", "session.go"},
	{ProbeSessionLiveLeftFull, "a live delivery found no outbox room within LivePushWait: left to the catch-up, woken at once", "session.go"},
	{ProbeSessionCatchUpWoken, "a session's catch-up ran early, woken by a live delivery it was left", "chat.go"},

	{ProbeChatBadName, "a room, user, message id or recipient name failed the name rule", "chat.go"},
	{ProbeChatPayloadOverLimit, "a send's payload exceeded MaxPayload: refused", "chat.go"},
	{ProbeChatEmptyPayload, "a send with an empty payload was refused", "chat.go"},
	{ProbeChatDuplicateSend, "a retried send was a duplicate: answered with its seq and fanned out from the log", "chat.go"},
	{ProbeChatDuplicateLost, "a duplicate send's log entry was gone: nothing fanned out", "chat.go"},
	{ProbeChatNotMember, "a send by a non-member was refused", "chat.go"},
	{ProbeChatUnknownRoom, "a send to an unknown room was refused", "chat.go"},
	{ProbeChatSessionReplaced, "a new session replaced an older one of the same user on this node", "chat.go"},
	{ProbeChatConnectStopping, "a connect reached a stopping node and was refused", "chat.go"},
	{ProbeChatReplayFailed, "a session's first replay failed (a Redis error, or the session ended meanwhile)", "chat.go"},

	{ProbeFanoutRouteUnknown, "single mode: a remote member had no route (offline): left to the catch-up", "fanout.go"},
	{ProbeFanoutRouteToSelf, "single mode: a member's route named this node though the user has no session here", "fanout.go"},
	{ProbeFanoutRoutesFailed, "the bulk route look-up (MGET) failed: every remote member left to the catch-up", "fanout.go"},

	{ProbeRelayRetried, "a relay attempt failed and was retried", "relay.go"},
	{ProbeRelayStaleEpoch, "a relay failed on a stale epoch: the peer was forgotten and the relay retried", "relay.go"},
	{ProbeRelayUnknownNode, "a relay's target was not in the registry (unregistered node)", "relay.go"},
	{ProbeRelayFallback, "a peer answered Unimplemented: the relay fell back to an older protocol", "relay.go"},
	{ProbeRelayGaveUp, "a relay failed its last attempt: dropped, recipients catch up from the log", "relay.go"},
	{ProbeRelayPeerReplaced, "a relay found its peer's connections closed since it looked them up", "relay.go"},
	{ProbeRelayRecvStaleEpoch, "a received relay named another epoch of this node: refused", "relay.go"},
	{ProbeRelayRecvOverLimit, "a received relay exceeded MaxPayload or MaxRecipients: refused", "relay.go"},
	{ProbeRelayRecvUnsupported, "a relay of a protocol this node does not speak was answered Unimplemented", "relay.go"},
	{ProbeRelayRecvNotLocal, "a relayed recipient had no live session here", "relay.go"},

	{ProbeStreamBacklogFull, "a stream link at its backlog bound refused a relay", "stream.go"},
	{ProbeStreamLinkClosed, "a relay was queued on a link that had closed (peer replaced)", "stream.go"},
	{ProbeStreamBroken, "a relay stream broke (a write, the open or the ack failed)", "stream.go"},
	{ProbeStreamResent, "a new stream rewrote items a broken one left unacknowledged", "stream.go"},
	{ProbeStreamGaveUp, "a link spent its attempts: its items were dropped", "stream.go"},
	{ProbeStreamFallback, "the peer does not speak v3: a link's items were relayed again in bulk", "stream.go"},
	{ProbeStreamIsolated, "the peer refused an item: the link's items were relayed again one by one", "stream.go"},
	{ProbeStreamHandover, "a closed link handed its items to the peer's current incarnation", "stream.go"},
	{ProbeStreamDropStopping, "a closed link of a stopping node dropped its items", "stream.go"},
	{ProbeStreamLingerAck, "a stream was closed for its ack because it lingered", "stream.go"},
	{ProbeStreamBatchAck, "a stream was closed for its ack because it carried StreamBatch items", "stream.go"},
	{ProbeStreamPartialAck, "an ack covered fewer items than the stream carried", "stream.go"},
	{ProbeStreamWatchdog, "a stream write or ack outlasted RelayTimeout: its watchdog cancelled the stream", "stream.go"},
	{ProbeStreamRecvDuplicate, "a stream receiver dropped an item it had already processed", "stream.go"},
	{ProbeStreamRecvOlderLink, "a stream receiver refused an item of a link older than one it had seen", "stream.go"},
	{ProbeStreamEpochRewound, "a stream receiver took a link older than the newest seen: the registry names its sender at that epoch (its epoch went backwards)", "stream.go"},
	{ProbeStreamStaleRefused, "a receiver refused our link as older than one it had seen: its items were relayed in bulk", "stream.go"},
	{ProbeStreamRecvReusedLink, "a stream receiver met a link named as one it had seen by another incarnation of its sender (the same epoch): its seqs start again", "stream.go"},
	{ProbeStreamEmptyAck, "a stream closed cleanly with none of its items acknowledged: a failed attempt", "stream.go"},

	{ProbePeerReplaced, "a peer's newer incarnation replaced the connections to its older one", "peers.go"},
	{ProbePeerKeptNewer, "a registry read older than the known peer was ignored", "peers.go"},
	{ProbePeerForgetSpared, "a forget of an old incarnation spared the newer one installed meanwhile", "peers.go"},
	{ProbePeerRereadFailed, "re-reading a known peer's registry entry failed: the known peer was kept", "peers.go"},
	{ProbePeerDowngraded, "a peer was remembered to speak an older protocol", "peers.go"},
	{ProbePeerNewerAtRewoundEpoch, "a later-started process of a peer replaced the known one at an epoch no higher than its (Redis lost the epoch's increment)", "peers.go"},

	{ProbeNodeHeartbeatFailed, "a registry heartbeat failed", "node.go"},
	{ProbeNodeHeartbeatSuperseded, "a heartbeat found a newer incarnation registered under the node's id: the node stopped heartbeating", "node.go"},
	{ProbeNodeDeregisterFailed, "a stopping node failed to deregister", "node.go"},
	{ProbeDirDeregisterSpared, "a deregister left the registry entry alone: it no longer named the stopping epoch", "directory.go"},
}

// Probes returns the registry of code probes, in declaration order.
func Probes() []ProbeInfo { return append([]ProbeInfo(nil), probes...) }

// probe tells the node's prober that the node hit name.
func (n *Node) probe(name string) {
	if n.deps.Probes != nil {
		n.deps.Probes.Hit(n.cfg.NodeID, name)
	}
}

package model

import (
	"fmt"
	"sort"
	"strings"
)

// FaultKind names what the simulator did to the system. The names are
// part of the record (the history's JSON) and of the seeds: the simulator
// derives each kind's fault plan from its name, so renaming one moves
// every trace.
type FaultKind string

// Timed faults: the simulator's fault plan and the scenario commands apply
// them to nodes, links, Redis or clients for a while (or at once).
const (
	FaultCrash       FaultKind = "crash"        // a node stops as a process does (until its restart)
	FaultRestart     FaultKind = "restart"      // a crashed node comes back with a new epoch
	FaultUpgrade     FaultKind = "upgrade"      // a node restarts with another protocol version
	FaultPartition   FaultKind = "partition"    // links between nodes cut (until their heal); also a call it lost
	FaultHeal        FaultKind = "heal"         // a partition's links restored
	FaultPause       FaultKind = "pause"        // a node holds every operation for a while
	FaultRedisOutage FaultKind = "redis-outage" // every Redis command fails for a while; also a command it failed
	FaultRedisSpike  FaultKind = "redis-spike"  // every Redis command is slow for a while
	FaultRouteFlush  FaultKind = "route-flush"  // every routing entry deleted
	FaultVanish      FaultKind = "vanish"       // a client stops reading without closing its stream
	FaultSlow        FaultKind = "slow"         // a client reads its deliveries slowly for a while
	// FaultStall: a client's app hangs with its connection up (it still
	// answers keep-alives) and stops reading its deliveries, for a while
	// or until the liveness phase; with a lag, it first goes offline for
	// that long while a burst of large messages fills its rooms, and comes
	// back stalled, so that its replay outgrows its outbox and the HTTP/2
	// window.
	FaultStall FaultKind = "stall"
	// FaultRedisFailover: Redis failed over to a replica that missed its
	// last writes (up to a second of them); no node restarts. Its record
	// is FaultRedisRewind's (the writes of a window lost).
	FaultRedisFailover FaultKind = "redis-failover"
	FaultForge         FaultKind = "forge" // a client call with a forged user credential FaultKind = "forge" // a client call with a forged user credential
	FaultSteal         FaultKind = "steal" // a client's own send with another user's message id and its own payload
	// FaultOverlap: a node restarted (or upgraded) with its new incarnation
	// started before the old one finished stopping; it spans from the stop
	// until the new one is up and the old one has stopped.
	FaultOverlap FaultKind = "overlap"
	// FaultBlip cuts the link between two nodes both ways for less than a
	// stream writer's give-up budget. It is not recorded as a timed fault:
	// what it costs is recorded per operation (a relay call it lost, a
	// relay stream it broke), so that the writer's back-off is judged.
	FaultBlip FaultKind = "blip"
	// FaultRedisRewind: Redis went back to an older state — a restore
	// from a snapshot, a failover to a replica missing the last writes.
	// Its record spans [snapshot, restore]: whatever was written to
	// Redis in between (messages, seqs, joins and leaves, routes, epochs)
	// may be gone, and seqs and epochs handed out then are handed out
	// again after it (rewind.go says what that excuses).
	FaultRedisRewind FaultKind = "redis-rewind"
	// FaultFlood: a user offline while the other members of one of its
	// rooms send it a backlog of messages; it then connects
	// again and replays them (a client with a long history).
	FaultFlood FaultKind = "flood"
	// FaultSupersede: a node restarted while its old incarnation lives
	// on, cut off from its peers and clients but not from Redis, and
	// stops later; it spans until the old one has stopped.
	FaultSupersede FaultKind = "supersede"
)

// Per-operation faults: drawn for one relay call, stream write or Redis
// command, or a link's connections reset by a scenario.
const (
	FaultDropRequest  FaultKind = "drop-request"  // a relay call never reaches its peer
	FaultDropResponse FaultKind = "drop-response" // a relay call's response is lost on its way back
	FaultDuplicate    FaultKind = "duplicate"     // a relay call reaches its peer twice
	FaultDelay        FaultKind = "delay"         // a relay call or stream write is held up to 2 s
	FaultRedisError   FaultKind = "redis-error"   // one Redis command fails
	FaultStreamBreak  FaultKind = "stream-break"  // a relay stream breaks (the writer resends)
	FaultStreamGiveUp FaultKind = "stream-giveup" // a relay stream broke as often as its writer tries (it may give its items up)
	FaultBreak        FaultKind = "break"         // a node's connections to a peer reset
	// FaultRecvBreak: a relay stream broken at its receiver between the
	// read of an item (claimed: the ack covers it) and its delivery, as
	// the sender's next write breaking or its watchdog firing would. The
	// item must still be delivered; the writer resends what the stream
	// left unacknowledged, and the receiver drops it as a duplicate.
	FaultRecvBreak FaultKind = "recv-break"
	// FaultStreamRefused: a relay stream its receiver ended refusing an
	// item (INVALID_ARGUMENT: a smaller limit, during a config rollout).
	// Not injected: the harness saw the receiver answer so on the wire.
	// Like a recv-break it delays the link's other items until the writer
	// learns of it at its next write or close and relays them again.
	FaultStreamRefused FaultKind = "stream-refused"
)

// BreaksStream reports whether a fault of kind k is a relay stream's
// break that delays its link's items until the writer wrote them again
// (stream-break, recv-break), rather than a fault that excuses them.
func (k FaultKind) BreaksStream() bool {
	return k == FaultStreamBreak || k == FaultRecvBreak || k == FaultStreamRefused
}

// Real-cluster faults: what relaysim real's nemesis does to processes and
// links (pauses and forged calls are FaultPause and FaultForge).
const (
	FaultKill         FaultKind = "kill"          // a relayd SIGKILLed, then restarted with -takeover
	FaultTerm         FaultKind = "term"          // a relayd SIGTERMed (graceful), then restarted
	FaultRedisRestart FaultKind = "redis-restart" // redis-server SIGKILLed, then restarted on its append-only file
	FaultLinkDelay    FaultKind = "link-delay"    // one direction between two nodes delayed
	FaultLinkDrop     FaultKind = "link-drop"     // one direction's connections reset and refused
	FaultLinkCut      FaultKind = "link-cut"      // one direction black-holed (bytes held, not lost)
)

// Keys of History.Recovery that are not kinds.
const (
	RecoveryDefault FaultKind = ""   // a kind without a recovery of its own
	RecoveryOp      FaultKind = "op" // any per-operation network fault
)

var faultKinds = []FaultKind{
	FaultCrash, FaultRestart, FaultUpgrade, FaultPartition, FaultHeal, FaultPause, FaultRedisOutage,
	FaultRedisSpike, FaultRouteFlush, FaultVanish, FaultSlow, FaultForge, FaultSteal, FaultOverlap, FaultBlip, FaultRedisRewind, FaultFlood, FaultSupersede,
	FaultDropRequest, FaultDropResponse, FaultDuplicate, FaultDelay, FaultRedisError,
	FaultStreamBreak, FaultStreamGiveUp, FaultBreak, FaultRecvBreak, FaultStreamRefused,
	FaultKill, FaultTerm, FaultRedisRestart, FaultLinkDelay, FaultLinkDrop, FaultLinkCut,
	FaultStall, FaultRedisFailover,
}

// ParseFaultKind reads a fault kind's name: the one place where text (a
// flag, a scenario file) becomes a kind.
func ParseFaultKind(s string) (FaultKind, error) {
	for _, k := range faultKinds {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		names[i] = string(k)
	}
	sort.Strings(names)
	return "", fmt.Errorf("unknown fault kind %q (want one of %s)", s, strings.Join(names, ", "))
}

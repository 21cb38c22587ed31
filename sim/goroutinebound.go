package sim

import "github.com/relaysim/relaysim/model"

// GoroutineBound is a node's goroutine budget at a sample, a formula of
// what the node holds, never of messages: a fixed set (server, refresh,
// health), its workers (at most max pool), a few per transport connection
// accepted or dialled (reader, writer, keep-alive, one call in flight from
// a client), a few per client stream (handler, session sync loop, pump), a
// few per channel to a peer (each gRPC client connection's resolver and
// balancer, for every other node: channels to a peer that is down stay
// until the node notices), and one relay handler per task running on a
// peer's workers (each holds at most one relay call). Fitted on seeds 1-24
// of the default run in both modes (10,110 samples, 1-4 channels per
// peer): the count never came within 9 of the bound.
func GoroutineBound(s model.Sample) int {
	return goroutinesFixed + s.Max + goroutinesPerConn*(s.InConns+s.OutConns) + goroutinesPerStream*s.OpenStreams +
		goroutinesPerChannel*max(s.Peers, s.LivePeers)*s.ChannelsPerPeer + s.PeerRunning
}

// StreamGoroutineBound is GoroutineBound in stream mode, where each channel
// to a peer also carries a relay stream link both ways: the sender's
// writer and its stream's context watcher, the receiver's handler and its
// own. A link that was replaced (its peer restarted) may still be handing
// over or winding down while its successor runs: twice that.
func StreamGoroutineBound(s model.Sample) int {
	return GoroutineBound(s) + 2*goroutinesPerLink*max(s.Peers, s.LivePeers)*s.ChannelsPerPeer
}

const (
	goroutinesFixed      = 32
	goroutinesPerConn    = 3
	goroutinesPerStream  = 3
	goroutinesPerChannel = 3
	goroutinesPerLink    = 4
)

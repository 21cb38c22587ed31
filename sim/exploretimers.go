// The relay's own timers a story's work waits on, seen from its
// observations, for the explorer's horizon (Cluster.HorizonTimers): a
// relay attempt backing off before its retry, a stream backing off before
// it resends what a break left unacknowledged, and a stream open until its
// linger closes it for the ack, and a relay call whose message the
// harness lost, waiting for the caller's deadline. Nothing of that is parked or in flight
// while the timer runs, yet the work goes on after it fires: a window
// closed then was cut, not finished.

package sim

import (
	"fmt"
	"sync"

	"github.com/relaysim/relaysim/system"
)

// relayTimers tracks that work while exploring (nil otherwise). It only
// counts: it parks nothing, traces nothing and changes no draw.
type relayTimers struct {
	mu sync.Mutex
	// last is each node's latest relay attempt (its RelayEvent's message
	// and target): the relay.retried probe that follows, from the same
	// goroutine, is its back-off.
	last map[string]string
	// retries counts, per relay (node, target, room#seq), the back-offs
	// begun and not yet ended by the next attempt.
	retries map[string]int
	// links are the stream links (node|link ->target) waiting on a timer:
	// open until the linger (or a batch) closes them for the ack, or
	// broken with items to resend after the back-off.
	links map[string]bool
	// deadlines counts the relay calls waiting for their deadline (the
	// harness lost their request or response: nodeHooks.lost).
	deadlines int
}

func newRelayTimers() *relayTimers {
	return &relayTimers{last: map[string]string{}, retries: map[string]int{}, links: map[string]bool{}}
}

// relayed notes a relay attempt's outcome: it ends the back-off of the
// attempt before it, if any.
func (t *relayTimers) relayed(e system.RelayEvent) {
	if t == nil {
		return
	}
	k := fmt.Sprintf("%s|%s|%s#%d", e.Node, e.Target, e.Room, e.Seq)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last[e.Node] = k
	if t.retries[k] > 0 {
		if t.retries[k]--; t.retries[k] == 0 {
			delete(t.retries, k)
		}
	}
}

// probe notes a code probe: relay.retried begins the back-off of the
// node's latest attempt.
func (t *relayTimers) probe(node, name string) {
	if t == nil || name != system.ProbeRelayRetried {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.last[node]; ok {
		t.retries[k]++
	}
}

// stream notes a stream link's step.
func (t *relayTimers) stream(e system.StreamEvent) {
	if t == nil {
		return
	}
	k := e.Node + "|" + e.Link + " ->" + e.Target
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.What {
	case "open":
		t.links[k] = true
	case "broken":
		// Items left unacknowledged are resent after the back-off, unless
		// the writer gives them up (an event of its own follows).
		t.links[k] = e.Items > 0
	default: // ack, drop, fallback, isolate, handover
		t.links[k] = false
	}
	if !t.links[k] {
		delete(t.links, k)
	}
}

// deadline notes a call that waits for its deadline; the func returned
// notes its end.
func (t *relayTimers) deadline() func() {
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	t.deadlines++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.deadlines--
		t.mu.Unlock()
	}
}

// down forgets a crashed node's timers: its incarnation stops at its next
// gate, so nothing it was waiting for runs.
func (t *relayTimers) down(node string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, node)
	for k := range t.retries {
		if nodeOfKey(k) == node {
			delete(t.retries, k)
		}
	}
	for k := range t.links {
		if nodeOfKey(k) == node {
			delete(t.links, k)
		}
	}
}

func nodeOfKey(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == '|' {
			return k[:i]
		}
	}
	return k
}

// pending counts the work waiting on a relay timer.
func (t *relayTimers) pending() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.links) + t.deadlines
	for _, r := range t.retries {
		n += r
	}
	return n
}

// timerProber counts the probes (probeCounts) and tells relayTimers.
type timerProber struct {
	p *probeCounts
	t *relayTimers
}

func (tp timerProber) Hit(node, name string) {
	tp.p.Hit(node, name)
	tp.t.probe(node, name)
}

// prober is the nodes' prober: the probe counts, and while exploring the
// relay timers too.
func (c *Cluster) prober() system.Prober {
	if c.timers == nil {
		return c.probes.prober()
	}
	return timerProber{p: c.probes, t: c.timers}
}

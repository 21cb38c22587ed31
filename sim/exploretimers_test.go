package sim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/relaysim/relaysim/system"
)

// The relay timers the horizon counts, from the relay's observations: a
// retry's back-off from its relay.retried probe to the next attempt, a
// stream from its open to its ack, a broken stream with items until it
// opens again or gives them up, a lost call until its deadline; a crash
// forgets its node's.
func TestRelayTimers(t *testing.T) {
	tm := newRelayTimers()
	failed := system.RelayEvent{Node: "n1", Target: "n2", Room: "r1", Seq: 1, Attempt: 1, Err: errors.New("lost")}
	tm.relayed(failed)
	assert.Equal(t, 0, tm.pending(), "a failed attempt, not retried (yet)")
	tm.probe("n1", system.ProbeRelayGaveUp)
	assert.Equal(t, 0, tm.pending(), "another probe")
	tm.probe("n1", system.ProbeRelayRetried)
	assert.Equal(t, 1, tm.pending(), "backing off")
	tm.relayed(system.RelayEvent{Node: "n1", Target: "n3", Room: "r1", Seq: 1, Attempt: 1})
	assert.Equal(t, 1, tm.pending(), "another relay's attempt ends nothing")
	again := failed
	again.Attempt, again.Err = 2, nil
	tm.relayed(again)
	assert.Equal(t, 0, tm.pending(), "the retry ran")

	link := system.StreamEvent{Node: "n1", Target: "n2", Link: "n1@1.2#0"}
	for _, step := range []struct {
		what    string
		items   int
		pending int
	}{{"open", 0, 1}, {"ack", 1, 0}, {"open", 0, 1}, {"broken", 2, 1}, {"open", 2, 1}, {"broken", 0, 0}, {"open", 0, 1}, {"broken", 1, 1}, {"drop", 1, 0}} {
		link.What, link.Items = step.what, step.items
		tm.stream(link)
		assert.Equal(t, step.pending, tm.pending(), "after %s (%d items)", step.what, step.items)
	}

	done := tm.deadline()
	assert.Equal(t, 1, tm.pending(), "a lost call waits for its deadline")
	done()
	assert.Equal(t, 0, tm.pending())

	tm.relayed(failed)
	tm.probe("n1", system.ProbeRelayRetried)
	link.What = "open"
	tm.stream(link)
	tm.stream(system.StreamEvent{Node: "n2", Target: "n1", Link: "n2@1.1#0", What: "open"})
	assert.Equal(t, 3, tm.pending())
	tm.down("n1")
	assert.Equal(t, 1, tm.pending(), "n1 crashed: only n2's stream is left")

	var none *relayTimers // a cluster not exploring
	none.relayed(failed)
	none.probe("n1", system.ProbeRelayRetried)
	none.stream(link)
	none.deadline()()
	none.down("n1")
	assert.Equal(t, 0, none.pending())
}

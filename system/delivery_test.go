package system

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sentLog records what the senders were acked with: seq -> client msg id.
type sentLog struct {
	mu   sync.Mutex
	next int // for unique client message ids
	byID map[uint64]string
}

// burst has each sender send n messages concurrently, so that relays from
// different nodes interleave.
func (l *sentLog) burst(t *testing.T, room string, n int, senders ...*testUser) {
	var wg sync.WaitGroup
	for _, s := range senders {
		wg.Go(func() {
			for range n {
				l.mu.Lock()
				l.next++
				id := fmt.Sprintf("%s-%d", s.name, l.next)
				l.mu.Unlock()
				resp, err := s.trySend(room, id, "payload of "+id)
				assert.NoError(t, err)
				if err == nil {
					l.mu.Lock()
					l.byID[resp.Seq] = id
					l.mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
}

// check asserts that u received exactly the seqs want of room, in order,
// each with the message id its sender was acked with.
func (l *sentLog) check(t *testing.T, u *testUser, room string, want []uint64) {
	t.Helper()
	assert.Equal(t, want, u.seqs(room), "%s: every message of its window, once, in seq order", u.name)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range u.deliveries() {
		assert.Equal(t, l.byID[d.Seq], d.MsgId, "%s: seq %d carries its own message", u.name, d.Seq)
	}
}

// TestClusterDeliversEveryMessageOnceInOrder runs a 3-node room with
// concurrent senders on every node, a join and a leave mid-stream, and a
// member that disconnects and reconnects to another node with its cursor.
func TestClusterDeliversEveryMessageOnceInOrder(t *testing.T) {
	inEveryMode(t, func(t *testing.T, mode Mode) {
		c := newCluster(t, mode, 3)
		c.createRoom("r")
		var members []*testUser
		for _, spec := range []struct{ name, node string }{
			{"a1", "n1"}, {"a2", "n1"}, {"b1", "n2"}, {"leaver", "n2"}, {"c1", "n3"}, {"mover", "n3"},
		} {
			u := c.connect(spec.name, spec.node)
			u.join("r")
			members = append(members, u)
		}
		a1, b1, leaver, c1, mover := members[0], members[2], members[3], members[4], members[5]
		joiner := c.connect("joiner", "n2")
		sent := &sentLog{byID: map[uint64]string{}}

		sent.burst(t, "r", 4, a1, b1, c1) // seqs 1..12
		c.settle()
		from := joiner.join("r")
		to := leaver.leave("r")
		require.Equal(t, uint64(13), from)
		require.Equal(t, uint64(12), to)

		sent.burst(t, "r", 3, a1, b1, c1) // 13..21
		c.settle()
		mover.disconnect()
		sent.burst(t, "r", 3, a1, b1, c1) // 22..30, missed by mover
		c.settle()
		// The mover comes back on another node, with cursor 21.
		mover.connect("n1", nil)
		sent.burst(t, "r", 2, a1, b1, c1) // 31..36
		c.settle()

		require.Equal(t, int64(36), c.logLen("r"))
		for _, u := range []*testUser{members[0], members[1], b1, c1, mover} {
			sent.check(t, u, "r", seqRange(1, 36))
		}
		sent.check(t, joiner, "r", seqRange(from, 36))
		sent.check(t, leaver, "r", seqRange(1, to))
		for _, d := range mover.deliveries() {
			if d.Seq >= 22 && d.Seq <= 30 {
				assert.True(t, d.FromLog, "mover: seq %d, missed while away, is replayed from the log", d.Seq)
			}
		}
	})
}

package dst

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Ops booked on a busy resource wait for its earliest free core; the
// longest wait is what the run's contention was.
func TestResourcesBookWaitsForAFreeCore(t *testing.T) {
	const work = 50 * time.Microsecond
	r := NewResources(func(op *Op) (string, int, time.Duration) { return op.Node, 2, work })
	s := NewScheduler(&Random{C: Seed(1).Rand()}, NewTrace(false, 0), func(string, string, string) time.Duration { return 0 })
	op := func(id string) *Op { return &Op{Node: "n1", Kind: "task", ID: id} }
	a, b, c := op("a"), op("b"), op("c")
	require.True(t, r.book(s, a, 0))
	require.True(t, r.book(s, b, 0))
	require.Zero(t, r.MaxWait(), "two cores: two ops start at once")
	require.True(t, r.book(s, c, 10*time.Microsecond))
	require.Equal(t, work, a.ReadyAt)
	require.Equal(t, 2*work, c.ReadyAt, "the third op starts when a core frees up")
	require.Equal(t, work-10*time.Microsecond, r.MaxWait())
	require.False(t, r.book(s, c, work), "an op is booked once")
	require.Equal(t, []ResourceBusy{{Resource: "n1", Busy: 3 * work}}, r.Busy())
}

// An op whose cost names no resource is not booked.
func TestResourcesFreeOpsAreNotBooked(t *testing.T) {
	r := NewResources(func(*Op) (string, int, time.Duration) { return "", 0, 0 })
	s := NewScheduler(&Random{C: Seed(1).Rand()}, NewTrace(false, 0), nil)
	require.False(t, r.book(s, &Op{Node: "n1"}, 0))
	require.Empty(t, r.Busy())
}

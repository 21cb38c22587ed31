package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBacklogCounter: items per stream and streams per unacknowledged
// item, as a writer whose acks fail twice and then come back shows them.
func TestBacklogCounter(t *testing.T) {
	var b backlogCounter
	b.configured("n1", 8, 3)
	w := func(stream string, seqs ...uint64) {
		for _, s := range seqs {
			b.written("n1", "n2", "n1@1.1#0", stream, s, 0, int(s))
		}
	}
	w("a1", 1, 2, 3) // ack lost
	w("a2", 1, 2, 3, 4)
	w("a3", 1, 2, 3, 4, 5) // acked
	b.acked("n1@1.1#0", 5)
	w("a4", 6)
	b.acked("n1@1.1#0", 6)
	w("a5", 7)
	recs := b.records()
	require.Len(t, recs, 1)
	r := recs[0]
	assert.Equal(t, 8, r.Bound)
	assert.Equal(t, 3, r.Attempts)
	assert.Equal(t, 5, r.MaxItems, "the most items one stream carried")
	assert.Equal(t, 3, r.MaxStreams, "items 1-3 were written on three streams")
	assert.Equal(t, uint64(1), r.Item)

	// A fourth stream carrying item 7 without an ack: over the attempts.
	w("a6", 7)
	w("a7", 7)
	w("a8", 7)
	r = b.records()[0]
	assert.Equal(t, 4, r.MaxStreams)
	assert.Equal(t, uint64(7), r.Item)
}

package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckReplayMemory(t *testing.T) {
	reads := func(page, max int) LogReads {
		return LogReads{Node: "n1", Page: page, Reads: 10, MaxEntries: max, MaxBytes: 40 * max, At: time.Second, Room: "r"}
	}
	tests := []struct {
		name  string
		reads []LogReads
		bad   int
	}{
		{"every read within a page", []LogReads{reads(128, 128), reads(8, 3)}, 0},
		{"no reads", nil, 0},
		{"a read of the whole backlog", []LogReads{reads(128, 1500)}, 1},
		{"unknown page is not judged", []LogReads{reads(0, 1<<20)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{LogReads: tt.reads}
			got := CheckReplayMemory(h)
			require.Len(t, got, tt.bad)
			for _, v := range got {
				assert.Equal(t, PropReplayMemory, v.Property)
				assert.Equal(t, "n1", v.Node)
				assert.Contains(t, v.Detail, "1500 entries")
			}
			assert.Equal(t, got, filter(CheckPrefix(h), PropReplayMemory))
			assert.Equal(t, got, filter(Check(h), PropReplayMemory))
		})
	}
}

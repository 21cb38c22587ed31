package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// upgradeRun: stream mode, n1 and n2 start on v1 and n2 is upgraded to v3
// at 5s; relay modes are checked with a 1s refresh allowance.
func upgradeRun(calls ...RelayCall) *History {
	return &History{Mode: "stream", ModeRefresh: time.Second, Relays: calls, Versions: []Version{
		{Node: "n1", From: 0, Protocol: 1},
		{Node: "n2", From: 0, Protocol: 1},
		{Node: "n3", From: 0, Protocol: 3},
		{Node: "n2", From: 5 * time.Second, Protocol: 3},
	}}
}

func rc(from, to, mode string, atMs int) RelayCall {
	return RelayCall{Time: time.Duration(atMs) * ms, From: from, To: to, Mode: mode, TraceLine: atMs}
}

func TestCheckRelayMode(t *testing.T) {
	tests := []struct {
		name   string
		h      *History
		detail string
	}{
		{"v1 nodes relay in single", upgradeRun(rc("n1", "n2", "single", 1000), rc("n2", "n1", "single", 1000)), ""},
		{"v3 to v1 in single", upgradeRun(rc("n3", "n2", "single", 1000)), ""},
		{"two v3 nodes in stream", upgradeRun(rc("n3", "n2", "stream", 7000), rc("n2", "n3", "stream", 7000)), ""},
		{"a v3 node relaying in stream to a v1 node", upgradeRun(rc("n3", "n1", "stream", 1000)),
			"at t=1s relayed to n1 in stream mode, but the best mode both speak is single (configured stream, n3 v3, n1 v1; allowed within 1s of a version change: [single])"},
		{"within the refresh after the peer's upgrade the old mode is allowed", upgradeRun(rc("n3", "n2", "single", 5500)), ""},
		{"past it, a fallback that stuck is not", upgradeRun(rc("n3", "n2", "single", 6500)),
			"at t=6.5s relayed to n2 in single mode, but the best mode both speak is stream (configured stream, n3 v3, n2 v3; allowed within 1s of a version change: [stream])"},
		{"bulk in stream mode after a refused stream is its isolation", upgradeRun(RelayCall{Time: 7000 * ms, From: "n3", To: "n2", Mode: "stream", Refused: true}, rc("n3", "n2", "bulk", 7010)), ""},
		{"bulk in stream mode without one is not", upgradeRun(rc("n3", "n2", "bulk", 7010)),
			"at t=7.01s relayed to n2 in bulk mode, but the best mode both speak is stream (configured stream, n3 v3, n2 v3; allowed within 1s of a version change: [stream])"},
		{"before a node's first incarnation, its first version counts", func() *History {
			h := upgradeRun(rc("n1", "n2", "stream", 1500))
			h.Versions[0].From, h.Versions[1].From = time.Second, time.Second
			return h
		}(), "at t=1.5s relayed to n2 in stream mode, but the best mode both speak is single (configured stream, n1 v1, n2 v1; allowed within 1s of a version change: [single])"},
		{"a failed read of the peer's entry keeps the version last read", func() *History {
			h := upgradeRun(RelayCall{Time: 6500 * ms, From: "n3", To: "n2", Mode: "single", Msg: "r1#4", TraceLine: 6500})
			h.Faults = []Fault{{From: 6500 * ms, To: 6500 * ms, Kind: "redis-error", Op: true, Redis: true, Nodes: []string{"n3"}, Msg: "r1#4"}}
			return h
		}(), ""},
		{"not a mode the pair never spoke", func() *History {
			h := upgradeRun(RelayCall{Time: 6500 * ms, From: "n3", To: "n2", Mode: "bulk", Msg: "r1#4", TraceLine: 6500})
			h.Faults = []Fault{{From: 6500 * ms, To: 6500 * ms, Kind: "redis-error", Op: true, Redis: true, Nodes: []string{"n3"}, Msg: "r1#4"}}
			return h
		}(), "at t=6.5s relayed to n2 in bulk mode, but the best mode both speak is stream (configured stream, n3 v3, n2 v3; allowed within 1s of a version change: [stream])"},
		{"nor after an error of another message, or on another node", func() *History {
			h := upgradeRun(RelayCall{Time: 6500 * ms, From: "n3", To: "n2", Mode: "single", Msg: "r1#4", TraceLine: 6500})
			h.Faults = []Fault{{From: 6500 * ms, To: 6500 * ms, Kind: "redis-error", Op: true, Redis: true, Nodes: []string{"n3"}, Msg: "r1#5"},
				{From: 6500 * ms, To: 6500 * ms, Kind: "redis-error", Op: true, Redis: true, Nodes: []string{"n1"}, Msg: "r1#4"}}
			return h
		}(), "at t=6.5s relayed to n2 in single mode, but the best mode both speak is stream (configured stream, n3 v3, n2 v3; allowed within 1s of a version change: [stream])"},
		{"unchecked without a refresh allowance", func() *History {
			h := upgradeRun(rc("n3", "n1", "stream", 1000))
			h.ModeRefresh = 0
			return h
		}(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckRelayMode(tt.h)
			if tt.detail == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, PropRelayMode, got[0].Property)
			assert.Equal(t, tt.detail, got[0].Detail)
		})
	}
}

package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestModeAtCapsTheConfiguredModeByTheNodesVersion(t *testing.T) {
	h := &History{Mode: "stream", Versions: []Version{
		{Node: "n1", From: 0, Protocol: 1},
		{Node: "n2", From: 0, Protocol: 3},
		{Node: "n1", From: 5 * time.Second, Protocol: 3}, // upgraded
	}}
	tests := []struct {
		name string
		mode string
		node string
		at   time.Duration
		want string
	}{
		{"a v1 node relays in single", "stream", "n1", time.Second, "single"},
		{"after its upgrade, in the configured mode", "stream", "n1", 6 * time.Second, "stream"},
		{"a v3 node in bulk mode stays bulk", "bulk", "n2", time.Second, "bulk"},
		{"a node without a record is the latest", "stream", "n3", time.Second, "stream"},
		{"single mode whatever the version", "single", "n2", time.Second, "single"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.Mode = tt.mode
			assert.Equal(t, tt.want, h.ModeAt(tt.node, tt.at))
		})
	}
}

package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRegistry(t *testing.T) {
	w := func(writer, before, after uint64) RegistryWrite {
		return RegistryWrite{At: time.Second, Node: "n1", Writer: writer, Before: before, After: after, Command: "evalsha"}
	}
	tests := []struct {
		name   string
		writes []RegistryWrite
		bad    []string
	}{
		{"a superseded heartbeat refused", []RegistryWrite{w(1, 2, 2)}, nil},
		{"none", nil, nil},
		{"an older epoch put back", []RegistryWrite{w(1, 2, 1)}, []string{"put its epoch 1 back"}},
		{"the newer entry removed", []RegistryWrite{w(1, 2, 1), w(1, 1, 0), w(1, 2, 0)}, []string{"put its epoch 1 back", "removed it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Registry: tt.writes}
			got := CheckRegistry(h)
			require.Len(t, got, len(tt.bad))
			for i, v := range got {
				assert.Equal(t, PropRegistry, v.Property)
				assert.Contains(t, v.Detail, tt.bad[i])
			}
			assert.Equal(t, got, filter(CheckPrefix(h), PropRegistry))
			assert.Equal(t, got, filter(Check(h), PropRegistry))
		})
	}
}

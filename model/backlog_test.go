package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckBacklog(t *testing.T) {
	link := func(items, streams int) LinkBacklog {
		return LinkBacklog{Link: "n1@1.1#0", From: "n1", To: "n2", Bound: 16, Attempts: 3,
			MaxItems: items, ItemsAt: time.Second, ItemsLine: 10, MaxStreams: streams, Item: 7, StreamsAt: 2 * time.Second, StreamsLine: 20}
	}
	tests := []struct {
		name  string
		links []LinkBacklog
		want  []int // trace lines of the violations, in order
	}{
		{"within both bounds", []LinkBacklog{link(16, 3), link(1, 1)}, nil},
		{"no links (not stream mode)", nil, nil},
		{"a stream carried more than the backlog bound", []LinkBacklog{link(17, 1)}, []int{10}},
		{"an item rewritten past the give-up", []LinkBacklog{link(4, 4)}, []int{20}},
		{"both", []LinkBacklog{link(40, 9)}, []int{10, 20}},
		{"unknown bounds are not judged", []LinkBacklog{{Link: "x", MaxItems: 1 << 20, MaxStreams: 99}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Links: tt.links}
			got := CheckBacklog(h)
			require.Len(t, got, len(tt.want))
			for i, v := range got {
				assert.Equal(t, PropBacklog, v.Property)
				assert.Equal(t, "n1", v.Node)
				assert.Equal(t, []int{tt.want[i]}, v.TraceLines)
			}
			// It holds at every quiescent point: CheckPrefix judges it too.
			assert.Equal(t, got, filter(CheckPrefix(h), PropBacklog))
			assert.Equal(t, got, filter(Check(h), PropBacklog))
		})
	}
}

func filter(vs []Violation, prop string) []Violation {
	var out []Violation
	for _, v := range vs {
		if v.Property == prop {
			out = append(out, v)
		}
	}
	return out
}

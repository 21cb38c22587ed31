package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func le(what string, atMs int) LinkEvent {
	return LinkEvent{Time: time.Duration(atMs) * ms, Link: "stream n1@1.1#0 ->n2", What: what, TraceLine: atMs}
}

func TestCheckStreamBackoff(t *testing.T) {
	tests := []struct {
		name   string
		events []LinkEvent
		detail string
	}{
		{"backing off k x 100ms after the k-th break", []LinkEvent{le("open", 0), le("break", 10), le("open", 110), le("break", 110), le("open", 310), le("ack", 320)}, ""},
		{"an ack starts the count afresh", []LinkEvent{le("break", 10), le("open", 110), le("ack", 120), le("break", 130), le("open", 230)}, ""},
		{"a reset too", []LinkEvent{le("break", 10), le("open", 110), le("break", 110), le("reset", 111), le("open", 112)}, ""},
		{"new traffic spending the next attempt at once", []LinkEvent{le("break", 10), le("open", 12)},
			"stream n1@1.1#0 ->n2 opened a stream at t=12ms, 2ms after its break 1 in a row (t=10ms); its back-off is 100ms"},
		{"the second back-off is twice the first", []LinkEvent{le("break", 10), le("open", 110), le("break", 110), le("open", 250)},
			"stream n1@1.1#0 ->n2 opened a stream at t=250ms, 140ms after its break 2 in a row (t=110ms); its back-off is 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckStreamBackoff(&History{RelayBackoff: 100 * ms, LinkEvents: tt.events})
			if tt.detail == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, PropStreamBackoff, got[0].Property)
			assert.Equal(t, tt.detail, got[0].Detail)
		})
	}
	assert.Empty(t, CheckStreamBackoff(&History{LinkEvents: []LinkEvent{le("break", 10), le("open", 12)}}), "unchecked without a back-off")
}

package realcluster

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

// story records a small history: a room, two members, one send delivered
// to both; lose drops bob's delivery from it.
func story(t testing.TB, lose bool) []byte {
	var buf bytes.Buffer
	rec := newRecorder(&buf, Meta{Runner: "test", Seed: "0x1", Mode: "bulk", Nodes: []string{"n1"}, Start: time.Now()})
	rec.record(model.Event{Kind: model.KindCreateRoom, User: "alice", Room: "r", Node: "n1", OK: true, Tries: 1})
	rec.record(model.Event{Kind: model.KindJoin, User: "alice", Room: "r", Node: "n1", OK: true, Seq: 1, Tries: 1})
	rec.record(model.Event{Kind: model.KindJoin, User: "bob", Room: "r", Node: "n1", OK: true, Seq: 1, Tries: 1})
	rec.record(model.Event{Kind: model.KindConnect, User: "bob", Node: "n1", OK: true, Cursors: map[string]uint64{}})
	rec.record(model.Event{Kind: model.KindSend, User: "alice", Room: "r", Node: "n1", OK: true, Seq: 1, MsgID: "m1", Tries: 1})
	rec.record(model.Event{Kind: model.KindDeliver, User: "alice", Room: "r", Node: "n1", Seq: 1, MsgID: "m1"})
	if !lose {
		rec.record(model.Event{Kind: model.KindDeliver, User: "bob", Room: "r", Node: "n1", Seq: 1, MsgID: "m1"})
	}
	i := rec.fault(model.Fault{Kind: KindPause, Nodes: []string{"n1"}, From: rec.now(), To: -1})
	rec.endFault(i)
	_, err := rec.finish("bulk", model.Final{Logs: map[string][]model.LogEntry{"r": {{Seq: 1, MsgID: "m1", Sender: "alice"}}}})
	require.NoError(t, err)
	return buf.Bytes()
}

// TestHistoryRoundTrip: what the recorder writes reads back as the same
// history, and the checks judge it: a clean story holds, a lost delivery
// is an exactly-once violation citing the send's line in the file.
func TestHistoryRoundTrip(t *testing.T) {
	h, meta, err := ReadHistory(bytes.NewReader(story(t, false)))
	require.NoError(t, err)
	require.NotNil(t, meta)
	assert.Equal(t, "bulk", h.Mode)
	assert.Len(t, h.Events, 5)
	assert.Equal(t, 2, h.Deliveries.Len())
	require.Len(t, h.Faults, 1)
	assert.GreaterOrEqual(t, h.Faults[0].To, h.Faults[0].From)
	assert.Empty(t, CheckHistory(h))

	h, _, err = ReadHistory(bytes.NewReader(story(t, true)))
	require.NoError(t, err)
	vs := CheckHistory(h)
	require.Len(t, vs, 1)
	assert.Equal(t, model.PropExactlyOnce, vs[0].Property)
	assert.Equal(t, "bob", vs[0].User)
	assert.Equal(t, []int{6}, vs[0].TraceLines, "the send is line 6 of the file (after the meta line)")
}

// TestReadHistoryRejectsBadFiles: a bad line is an error naming it.
func TestReadHistoryRejectsBadFiles(t *testing.T) {
	good := string(story(t, false))
	lines := strings.SplitAfter(good, "\n")
	tests := []struct{ name, file, want string }{
		{"empty", "", "no final record"},
		{"cut short", strings.Join(lines[:4], ""), "no final record"},
		{"not JSON", lines[0] + "{oops\n", "line 2:"},
		{"unknown type", `{"type":"sample2"}` + "\n", `line 1: unknown record type "sample2"`},
		{"record without its field", `{"type":"event"}` + "\n", `line 1: a "event" record without its "event" field`},
		{"two finals", good + lines[len(lines)-2], "a second final record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadHistory(strings.NewReader(tt.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

package model

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventJSONKeepsInvalidUTF8(t *testing.T) {
	events := []Event{
		{Time: time.Second, Kind: KindSend, User: "u\xff1", Room: "caf\xe9", MsgID: "m\xc3", OK: false, Err: "InvalidArgument",
			Cursors: map[string]uint64{"r\xfe": 3, "ok": 4}},
		{Time: 2 * time.Second, Kind: KindDeliver, User: "ü", Room: "屋", MsgID: "m1", Sender: "s\x80", Payload: 7, FromLog: true,
			Cursors: map[string]uint64{"fine": 1}},
		{Kind: KindJoin, User: "plain", Room: "r1", OK: true},
	}
	for _, e := range events {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		var got Event
		require.NoError(t, json.Unmarshal(b, &got), "%s", b)
		require.Equal(t, e, got, "%s", b)
	}
	// A valid event's JSON is as before: no raw fields.
	b, err := json.Marshal(events[2])
	require.NoError(t, err)
	require.NotContains(t, string(b), "Raw")
}

func TestLogEntryJSONKeepsInvalidUTF8(t *testing.T) {
	for _, l := range []LogEntry{{Seq: 1, MsgID: "caf\xe9", Sender: "u\xff"}, {Seq: 2, MsgID: "m", Sender: "u", Payload: 9}} {
		b, err := json.Marshal(l)
		require.NoError(t, err)
		var got LogEntry
		require.NoError(t, json.Unmarshal(b, &got))
		require.Equal(t, l, got, "%s", b)
	}
}

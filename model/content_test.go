package model

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entry is a log entry with its sender and payload digest.
func entry(seq uint64, sender, id string, payload uint64) LogEntry {
	return LogEntry{Seq: seq, MsgID: id, Sender: sender, Payload: payload}
}

// sndP is an OK send with its payload digest; steal marks a steal.
func sndP(line int, user, room string, seq uint64, id string, payload uint64, steal bool) Event {
	ev := snd(line, user, room, seq, id)
	ev.Payload, ev.Steal = payload, steal
	return ev
}

// dlvP is a delivery with the sender and payload it carried.
func dlvP(line int, user, room string, seq uint64, id, sender string, payload uint64) Event {
	ev := dlv(line, user, room, seq, id)
	ev.Sender, ev.Payload = sender, payload
	return ev
}

func refused(ev Event, code string) Event {
	ev.OK, ev.Err, ev.Seq = false, code, 0
	return ev
}

func TestCheckContent(t *testing.T) {
	three := map[string][]Window{"u1": open, "u2": open, "u3": open}
	// u1 sends m1 (payload 11); u2, a member, steals the id with its own
	// payload 22: its own new message at seq 2. u4 is no member.
	log := []LogEntry{entry(1, "u1", "m1", 11), entry(2, "u2", "m1", 22)}
	good := []Event{
		sndP(1, "u1", "r1", 1, "m1", 11, false),
		dlvP(2, "u2", "r1", 1, "m1", "u1", 11), dlvP(3, "u3", "r1", 1, "m1", "u1", 11),
		sndP(4, "u2", "r1", 2, "m1", 22, true),
		dlvP(5, "u1", "r1", 2, "m1", "u2", 22), dlvP(6, "u3", "r1", 2, "m1", "u2", 22),
		refused(sndP(7, "u4", "r1", 0, "m1", 44, true), "FailedPrecondition"),
	}
	tests := []struct {
		name   string
		log    []LogEntry
		events []Event
		want   []Violation
	}{
		{"a member's steal is its own message, a non-member's refused", log, good, nil},
		{"without recorded content only ids are compared", []LogEntry{entry(1, "u1", "m1", 0)}, []Event{
			snd(1, "u1", "r1", 1, "m1"), dlv(2, "u2", "r1", 1, "m1"),
		}, nil},
		{"the duplicate fanned out the steal's content (bug 2)", log[:1], []Event{
			sndP(1, "u1", "r1", 1, "m1", 11, false),
			dlvP(2, "u2", "r1", 1, "m1", "u1", 11),
			sndP(4, "u2", "r1", 1, "m1", 22, true), // acked as a duplicate of u1's
			dlvP(5, "u3", "r1", 1, "m1", "u2", 22), dlvP(6, "u1", "r1", 1, "m1", "u2", 22),
		}, []Violation{
			{Property: PropContent, User: "u2", Room: "r1", Seq: 1, TraceLines: []int{4}},
			{Property: PropContent, User: "u3", Room: "r1", Seq: 1, TraceLines: []int{5, 6}},
		}},
		{"a non-member's steal accepted as a duplicate", log[:1], []Event{
			sndP(1, "u1", "r1", 1, "m1", 11, false),
			sndP(4, "u4", "r1", 1, "m1", 44, true),
		}, []Violation{
			{Property: PropContent, User: "u4", Room: "r1", Seq: 1, TraceLines: []int{4}},
			{Property: PropContent, User: "u4", Room: "r1", Seq: 1, TraceLines: []int{4}},
		}},
		{"a member's steal refused with the wrong code", log[:1], []Event{
			sndP(1, "u1", "r1", 1, "m1", 11, false),
			refused(sndP(4, "u2", "r1", 0, "m1", 22, true), "AlreadyExists"),
		}, []Violation{{Property: PropContent, User: "u2", Room: "r1", TraceLines: []int{4}}}},
		{"the log holds another payload than the sender sent", []LogEntry{entry(1, "u1", "m1", 99)}, []Event{
			sndP(1, "u1", "r1", 1, "m1", 11, false),
		}, []Violation{
			{Property: PropContent, User: "u1", Room: "r1", Seq: 1, TraceLines: []int{1}},
			{Property: PropContent, User: "u1", Room: "r1", Seq: 1, TraceLines: []int{1}},
		}},
		{"the log holds a message nobody sent", []LogEntry{entry(1, "u1", "m1", 11), entry(2, "u3", "m1", 33)}, []Event{
			sndP(1, "u1", "r1", 1, "m1", 11, false),
		}, []Violation{{Property: PropContent, User: "u3", Room: "r1", Seq: 2}}},
		{"a delivery with another payload", log[:1], []Event{
			sndP(1, "u1", "r1", 1, "m1", 11, false),
			dlvP(2, "u2", "r1", 1, "m1", "u1", 12),
		}, []Violation{{Property: PropContent, User: "u2", Room: "r1", Seq: 1, TraceLines: []int{2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := oneRoom(tt.log, three, tt.events...)
			got := CheckContent(h)
			for i := range got {
				require.NotEmpty(t, got[i].Detail)
				got[i].Detail = ""
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// The deliveries kept in a DeliveryLog carry their sender and payload
// back out, and the same id from two senders stays two messages.
func TestCheckContentDeliveryLog(t *testing.T) {
	h := oneRoom([]LogEntry{entry(1, "u1", "m1", 11), entry(2, "u2", "m1", 22)}, map[string][]Window{"u1": open, "u2": open, "u3": open},
		sndP(1, "u1", "r1", 1, "m1", 11, false), sndP(4, "u2", "r1", 2, "m1", 22, true))
	h.Deliveries = &DeliveryLog{}
	h.Deliveries.Add(dlvP(2, "u3", "r1", 1, "m1", "u1", 11))
	h.Deliveries.Add(dlvP(5, "u3", "r1", 2, "m1", "u2", 22))
	assert.Empty(t, CheckContent(h))
	h.Deliveries.Add(dlvP(6, "u1", "r1", 2, "m1", "u1", 11)) // the real one's content under the steal's seq
	vs := CheckContent(h)
	require.Len(t, vs, 1)
	assert.Contains(t, vs[0].Detail, `carried "m1" from u1 payload`)
	var got []Event
	h.Deliveries.Each(func(ev Event) { got = append(got, ev) })
	assert.Equal(t, "u2", got[1].Sender)
	assert.Equal(t, uint64(22), got[1].Payload)
}

func TestPayloadDigest(t *testing.T) {
	assert.NotEqual(t, PayloadDigest([]byte("m:a")), PayloadDigest([]byte("m:b")))
	assert.Equal(t, PayloadDigest([]byte("m:a")), PayloadDigest([]byte("m:a")))
	assert.NotZero(t, PayloadDigest(nil))
	f := fnv.New64a()
	_, _ = f.Write([]byte("m:u1-m7"))
	assert.Equal(t, f.Sum64(), PayloadDigest([]byte("m:u1-m7")), "FNV-1a 64")
}

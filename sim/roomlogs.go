package sim

import (
	"fmt"
	"sort"

	"github.com/alicebob/miniredis/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/relaysim/relaysim/model"
)

// This file reads the room logs the oracle checks the clients against,
// with code of its own: nothing here asks the relay what it did.

// readLogs reads the logs of rooms straight from miniredis after the run.
// The entries are decoded here, from the wire format of relay.proto's
// LogEntry (msg_id = 1, sender = 2, payload = 3: kept as its digest,
// model.PayloadDigest), not with the relay's code: the oracle must not
// trust the decoder of the system it judges.
func readLogs(m *miniredis.Miniredis, rooms []string) (map[string][]model.LogEntry, error) {
	out := map[string][]model.LogEntry{}
	for _, room := range rooms {
		raw, err := m.List("room:" + room + ":log")
		if err != nil && err != miniredis.ErrKeyNotFound {
			return nil, fmt.Errorf("read log of %s: %w", room, err)
		}
		entries := make([]model.LogEntry, 0, len(raw))
		for i, r := range raw {
			e, err := decodeLogEntry([]byte(r))
			if err != nil {
				return nil, fmt.Errorf("read log of %s seq %d: %w", room, i+1, err)
			}
			e.Seq = uint64(i + 1)
			entries = append(entries, e)
		}
		out[room] = entries
	}
	return out, nil
}

func decodeLogEntry(b []byte) (model.LogEntry, error) {
	var e model.LogEntry
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return e, protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2 || num == 3) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return e, protowire.ParseError(n)
			}
			switch num {
			case 1:
				e.MsgID = string(v)
			case 2:
				e.Sender = string(v)
			default:
				e.Payload = 0 // an empty payload (never sent: the relay refuses it) is no content
				if len(v) > 0 {
					e.Payload = model.PayloadDigest(v)
				}
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return e, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return e, nil
}

// roomsSeen lists the rooms the clients named (in events, or in
// deliveries: more), sorted.
func roomsSeen(events []model.Event, more []string) []string {
	seen := map[string]bool{}
	for _, ev := range events {
		if ev.Room != "" {
			seen[ev.Room] = true
		}
	}
	for _, r := range more {
		seen[r] = true
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

package model

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// A history is saved as JSON lines (relaysim run -history, relaysim real)
// and judged again later (relaysim check). JSON strings are UTF-8: a name
// that is not valid UTF-8 — the bad-names workload sends such names on
// purpose — would come back with U+FFFD in place of its bytes and be judged
// as another name. So an Event and a LogEntry write every string that is
// not valid UTF-8 a second time, as the base64 of its exact bytes, and read
// those bytes back in preference to the lossy text.

// rawField is one string field of a record, by its JSON name.
type rawField struct {
	name string
	ptr  *string
}

func (e *Event) rawFields() []rawField {
	return []rawField{{"User", &e.User}, {"Room", &e.Room}, {"Node", &e.Node}, {"MsgID", &e.MsgID},
		{"Sender", &e.Sender}, {"Err", &e.Err}, {"Cred", &e.Cred}}
}

func (l *LogEntry) rawFields() []rawField {
	return []rawField{{"MsgID", &l.MsgID}, {"Sender", &l.Sender}}
}

// rawOf returns, for each field that is not valid UTF-8, its bytes in
// base64 by field name (nil when every field is valid).
func rawOf(fields []rawField) map[string]string {
	var raw map[string]string
	for _, f := range fields {
		if !utf8.ValidString(*f.ptr) {
			if raw == nil {
				raw = map[string]string{}
			}
			raw[f.name] = base64.StdEncoding.EncodeToString([]byte(*f.ptr))
		}
	}
	return raw
}

// restore puts the exact bytes of raw back into the fields.
func restore(fields []rawField, raw map[string]string) error {
	for _, f := range fields {
		if b64, ok := raw[f.name]; ok {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return err
			}
			*f.ptr = string(b)
		}
	}
	return nil
}

type eventAlias Event

type eventJSON struct {
	eventAlias
	// Raw holds the exact bytes (base64) of the string fields that are not
	// valid UTF-8.
	Raw map[string]string `json:",omitempty"`
	// RawCursors replaces Cursors when a cursor's room is not valid UTF-8:
	// the rooms are the base64 of their bytes.
	RawCursors map[string]uint64 `json:",omitempty"`
}

// MarshalJSON writes the event with the exact bytes of its names.
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{eventAlias: eventAlias(e), Raw: rawOf(e.rawFields())}
	for room := range e.Cursors {
		if !utf8.ValidString(room) {
			j.RawCursors = make(map[string]uint64, len(e.Cursors))
			for r, c := range e.Cursors {
				j.RawCursors[base64.StdEncoding.EncodeToString([]byte(r))] = c
			}
			j.Cursors = nil
			break
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads an event written by MarshalJSON (or by an older
// writer without the raw fields).
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event(j.eventAlias)
	if err := restore(e.rawFields(), j.Raw); err != nil {
		return err
	}
	if j.RawCursors != nil {
		e.Cursors = make(map[string]uint64, len(j.RawCursors))
		for r, c := range j.RawCursors {
			room, err := base64.StdEncoding.DecodeString(r)
			if err != nil {
				return err
			}
			e.Cursors[string(room)] = c
		}
	}
	return nil
}

type logEntryAlias LogEntry

type logEntryJSON struct {
	logEntryAlias
	Raw map[string]string `json:",omitempty"`
}

// MarshalJSON writes the entry with the exact bytes of its names.
func (l LogEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(logEntryJSON{logEntryAlias: logEntryAlias(l), Raw: rawOf(l.rawFields())})
}

// UnmarshalJSON reads an entry written by MarshalJSON.
func (l *LogEntry) UnmarshalJSON(b []byte) error {
	var j logEntryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = LogEntry(j.logEntryAlias)
	return restore(l.rawFields(), j.Raw)
}

package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system/relaypb"
)

// FuzzDecodeLogEntry: the oracle's own room-log decoder (it reads entries
// without the relay's code) never panics, and reads what protobuf reads
// wherever protobuf accepts the bytes.
func FuzzDecodeLogEntry(f *testing.F) {
	for _, e := range []*relaypb.LogEntry{
		{MsgId: "u1-m7", Sender: "u1", Payload: []byte("m:u1-m7")}, {}, {MsgId: "x"},
	} {
		b, err := proto.Marshal(e)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x05, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeLogEntry(b)
		var want relaypb.LogEntry
		if proto.Unmarshal(b, &want) != nil {
			return
		}
		require.NoError(t, err, "protobuf reads %x", b)
		assert.Equal(t, want.MsgId, got.MsgID)
		assert.Equal(t, want.Sender, got.Sender)
		if len(want.Payload) == 0 {
			assert.Zero(t, got.Payload)
		} else {
			assert.Equal(t, model.PayloadDigest(want.Payload), got.Payload)
		}
	})
}

// FuzzParseSeed: a seed that parses prints and parses back to itself.
func FuzzParseSeed(f *testing.F) {
	for _, s := range []string{"0x2a", "42", "", "0x", "0xFFFFFFFFFFFFFFFF", "18446744073709551616", " 7 ", "-1", "0X2A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seed, err := ParseSeed(s)
		if err != nil {
			return
		}
		for _, form := range []string{seed.String(), fmt.Sprint(uint64(seed))} {
			again, err := ParseSeed(form)
			require.NoError(t, err, form)
			assert.Equal(t, seed, again, form)
		}
	})
}

// FuzzParseVersions and FuzzParseUpgrade: accepted versions are real
// protocol versions, and an upgrade prints and parses back to itself.
func FuzzParseVersions(f *testing.F) {
	for _, s := range []string{"v1,v2,v3", "3", "v4", "", ",", "v1, v3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := ParseVersions(s)
		if err != nil {
			return
		}
		for _, v := range vs {
			assert.True(t, v >= 1 && v <= 3, "version %d from %q", v, s)
		}
	})
}

func FuzzParseUpgrade(f *testing.F) {
	for _, s := range []string{"v1:v3", "v3:v1", "1:2", ":", "v1:", "v1:v3:v2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUpgrade(s)
		if err != nil {
			return
		}
		again, err := ParseUpgrade(u.String())
		require.NoError(t, err)
		assert.Equal(t, u, again)
	})
}

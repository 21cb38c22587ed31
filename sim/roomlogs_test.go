package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system/relaypb"
)

// The oracle decodes room-log entries with code of its own; it must read
// what the relay's protocol writes, and skip fields it does not know.
func TestDecodeLogEntry(t *testing.T) {
	raw, err := proto.Marshal(&relaypb.LogEntry{MsgId: "u1-m7", Sender: "u1", Payload: []byte("m:u1-m7")})
	require.NoError(t, err)
	raw = protowire.AppendVarint(protowire.AppendTag(raw, 9, protowire.VarintType), 42) // a field from a newer protocol
	e, err := decodeLogEntry(raw)
	require.NoError(t, err)
	assert.Equal(t, "u1-m7", e.MsgID)
	assert.Equal(t, "u1", e.Sender)
	assert.Equal(t, model.PayloadDigest([]byte("m:u1-m7")), e.Payload)
	_, err = decodeLogEntry([]byte{0x0a, 0x05, 'a'}) // a length past the end
	assert.Error(t, err)
}

package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"
)

// A message's name in the history comes from the system's typed message,
// and a relay call names the message it carries.
func TestMessageIdentityIsData(t *testing.T) {
	assert.Equal(t, "r2#17", msgName(system.Message{Room: "r2", Seq: 17, Retry: true}))
	assert.Equal(t, "", msgName(system.Message{}))
	msg := &relaypb.RelayedMessage{Room: "r3", Seq: 4}
	for _, req := range []any{&relaypb.RelayMessageRequest{Message: msg}, &relaypb.RelayBulkMessageRequest{Message: msg}} {
		m, ok := relayedOf(req)
		assert.True(t, ok)
		assert.Equal(t, system.Message{Room: "r3", Seq: 4}, m)
	}
	_, ok := relayedOf(&relaypb.SendRequest{Room: "r1"})
	assert.False(t, ok, "a client call carries no relayed message")
}

package memnet

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test leaves no goroutine behind: no reader, writer, acceptor or
// deadline timer outlives its connection.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

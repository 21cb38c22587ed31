package system

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test or benchmark leaves a goroutine
// behind. Tests run in synctest bubbles, which already refuse to end with a
// goroutine blocked; this guards what runs outside them (benchmarks, the
// real-Redis variants). Nothing is ignored: every node, client and Redis
// connection is closed before its test returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

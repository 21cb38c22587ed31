package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (client
// connections, log readers and process waiters of the integration test
// included).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

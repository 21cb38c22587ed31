package scenarios

import (
	"testing"

	"go.uber.org/goleak"
)

// Runs live in synctest bubbles (which fail on leftover goroutines);
// goleak guards everything outside them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// Everything a run starts lives in its bubble; goleak guards the rest.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

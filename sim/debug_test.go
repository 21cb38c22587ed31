package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/relaysim/relaysim/system"
)

// TestDebugDiff writes N traces of one seed to /tmp for diffing:
// DEBUGDIFF=0xd00d000f:single go test ./sim -run TestDebugDiff
func TestDebugDiff(t *testing.T) {
	spec := os.Getenv("DEBUGDIFF")
	if spec == "" {
		t.Skip("set DEBUGDIFF=seed:mode")
	}
	seedS, mode, _ := strings.Cut(spec, ":")
	seed, err := ParseSeed(seedS)
	if err != nil {
		t.Fatal(err)
	}
	cfg := denseConfig(seed, system.Mode(mode))
	cfg.KeepTrace = true
	for i := range 12 {
		r := Run(t, cfg)
		os.WriteFile(fmt.Sprintf("/tmp/dd%d.txt", i), []byte(r.Trace.Text()), 0o644)
	}
}

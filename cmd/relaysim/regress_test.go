package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunsThatOnceFailed: runs that failed before a fix, replayed as a
// user pastes them. The first two ended in a harness error (two messages
// Redis gave one seq: their ops' gate keys collided, until gate aliases);
// the last two failed a property on a relay bug (a peer kept at a reused
// epoch: relay-mode; an older process took the registry back:
// timely-live-delivery). Each must now pass.
func TestRunsThatOnceFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runner")
	}
	bin := buildRunner(t)
	wide := "-alphabet=wide -max-floods=1 -max-redis-failovers=1 -max-redis-rewinds=1 -max-stalls=2 -max-supersedes=1"
	for _, cmd := range []string{
		"run -seed 0x183 -mode single -max-stalls=2",
		"run -seed 0x10 -mode single " + wide,
		"run -seed 0x32 -mode stream -max-redis-rewinds=1 -max-stalls=2 -upgrade=v1:v3",
		"run -seed 0x2a -mode stream " + wide,
	} {
		out, err := exec.Command(bin, strings.Fields(cmd)...).CombinedOutput()
		assert.NoError(t, err, "%s:\n%s", cmd, lastLines(string(out), 8))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package main

import (
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecondProcessRefused: a second relayd under a node id whose registry
// entry is live refuses to start (exit 1, saying why); with -takeover it
// starts and registers a new epoch.
func TestSecondProcessRefused(t *testing.T) {
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH; install it (apt-get install redis-server) to run the node-identity test")
	}
	if testing.Short() {
		t.Skip("starts processes; skipped with -short")
	}
	bin := buildRelayd(t)
	redisAddr := startRedis(t, redisServer)
	first := startRelayd(t, bin, "n1", redisAddr)

	second := exec.Command(bin, "-node", "n1", "-listen", "127.0.0.1:0", "-redis", redisAddr, "-token", itToken)
	dieWithTest(second)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	done := make(chan error, 1)
	require.NoError(t, second.Start())
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 1, exit.ExitCode())
		assert.Contains(t, stderr.String(), "node n1 is registered at "+first.addr)
		assert.Contains(t, stderr.String(), "-takeover")
	case <-time.After(itTimeout):
		_ = second.Process.Kill()
		<-done
		t.Fatal("the second n1 did not refuse to start")
	}

	taken := startRelayd(t, bin, "n1", redisAddr, "-takeover")
	assert.NotEqual(t, first.addr, taken.addr)
}

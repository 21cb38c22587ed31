package realcluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

// realConfig skips unless real processes may be started (RELAYSIM_REAL=1
// and redis-server installed), builds relayd and returns a short run's
// configuration.
func realConfig(t *testing.T) Config {
	if os.Getenv("RELAYSIM_REAL") == "" {
		t.Skip("starts relayd and redis-server processes for ~30 s: set RELAYSIM_REAL=1 (make real runs the full 60 s run)")
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH; install it (apt-get install redis-server) to run the real cluster")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "relayd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/relaysim/relaysim/cmd/relayd").CombinedOutput()
	require.NoError(t, err, "go build relayd: %s", out)
	cfg := DefaultConfig()
	cfg.Duration, cfg.Drain, cfg.Faults = 12*time.Second, 20*time.Second, 7
	cfg.Relayd, cfg.RedisServer, cfg.Dir = bin, redisServer, filepath.Join(dir, "out")
	return cfg
}

// gone asserts that none of pids is a live process.
func gone(t *testing.T, pids []int) {
	require.NotEmpty(t, pids)
	for _, pid := range pids {
		err := syscall.Kill(pid, 0)
		assert.True(t, errors.Is(err, syscall.ESRCH), "pid %d is still there (%v)", pid, err)
	}
}

// TestRealRun: a short run with every nemesis kind holds every property,
// writes a history that reads back to the same verdict, and leaves no
// process behind.
func TestRealRun(t *testing.T) {
	cfg := realConfig(t)
	res, err := Run(context.Background(), cfg, testWriter{t})
	require.NoError(t, err)
	assert.Empty(t, res.Violations)
	assert.Empty(t, res.Errs)
	assert.True(t, res.Settled)
	for _, k := range Kinds {
		assert.Positive(t, res.Faults[k], "kind %s injected", k)
	}
	gone(t, res.PIDs)
	f, err := os.Open(res.History)
	require.NoError(t, err)
	defer f.Close()
	h, meta, err := ReadHistory(f)
	require.NoError(t, err)
	assert.Equal(t, "relaysim real", meta.Runner)
	assert.Empty(t, CheckHistory(h))
	live, fromLog := model.DeliveryCounts(h)
	assert.Equal(t, res.Live+res.FromLog, live+fromLog)
}

// TestRealRunInterrupted: a run whose context ends (SIGINT) stops every
// process it started and says it was interrupted.
func TestRealRunInterrupted(t *testing.T) {
	cfg := realConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res, err := Run(ctx, cfg, testWriter{t})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "interrupted")
	gone(t, res.PIDs)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

package mutants

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The catalog's heartbeat names the mutants in flight, sorted, and how
// many are done.
func TestWorkingHeartbeat(t *testing.T) {
	w := newWorking(5)
	w.start("gap-not-filled")
	w.start("auth-ignores-send")
	w.start("no-dedup")
	w.finish("no-dedup")
	assert.Regexp(t, `^mutants: 1/5 done after \d+s; working on auth-ignores-send \(\d+s\), gap-not-filled \(\d+s\)$`, w.line())
	var out lockedBuffer
	stop := w.heartbeat(&out, 10*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	assert.Contains(t, out.String(), "mutants: 1/5 done after ")
}

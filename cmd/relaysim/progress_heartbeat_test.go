package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// syncBuffer is a buffer the heartbeat's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Off a terminal, a long job says where it is every period, with its
// latest status, until it stops; nothing after the stop.
func TestHeartbeatOffATerminal(t *testing.T) {
	var w syncBuffer
	var st status
	st.set("3/10 runs, 0 failed")
	stop := startHeartbeat(&w, 20*time.Millisecond, "sweep", &st)
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(w.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	got := w.String()
	assert.GreaterOrEqual(t, strings.Count(got, "\n"), 2, got)
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		assert.Regexp(t, `^sweep: 3/10 runs, 0 failed \(\d+s so far\)$`, line)
	}
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, got, w.String(), "silent after stop")
}

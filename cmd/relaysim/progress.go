package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress reports a sweep's progress on stderr. On a terminal it keeps
// one line up to date in place (runs done, failed, runs/s, ETA); anywhere
// else (a CI log, a file) it prints a plain line at every 5% with counts
// only, so logs stay short and the same from run to run.
type progress struct {
	w                io.Writer
	tty              bool
	total, step      int
	finished, failed int
	label            string
	status           status // "12/200 runs, 1 failed", for the heartbeat
	start            time.Time
	now              func() time.Time
}

func newProgress(w io.Writer, total int, s shard) *progress {
	label := "sweep"
	if s.N > 1 {
		label = "sweep " + s.String()
	}
	return &progress{w: w, tty: stderrIsTerminal(w), total: total, step: max(1, total/20), label: label, start: time.Now(), now: time.Now}
}

// stderrIsTerminal reports whether w is a terminal (report.go's
// isTerminal: a character device), not a pipe, a file or a buffer.
func stderrIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// done counts one finished job. The caller serialises calls.
func (p *progress) done(ok bool) {
	p.finished++
	if !ok {
		p.failed++
	}
	p.status.set(fmt.Sprintf("%d/%d runs, %d failed", p.finished, p.total, p.failed))
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r%s\x1b[K", p.line())
	case p.finished%p.step == 0 || p.finished == p.total:
		fmt.Fprintf(p.w, "sweep: %d/%d runs, %d failed\n", p.finished, p.total, p.failed)
	}
}

// line is the terminal's progress line.
func (p *progress) line() string {
	el := p.now().Sub(p.start)
	rate := float64(p.finished) / max(el.Seconds(), 1e-9)
	eta := "?"
	if p.finished > 0 && p.finished < p.total {
		eta = time.Duration(float64(p.total-p.finished) / rate * float64(time.Second)).Round(time.Second).String()
	} else if p.finished == p.total {
		eta = "0s"
	}
	return fmt.Sprintf("%s: %d/%d runs, %d failed, %.1f runs/s, ETA %s", p.label, p.finished, p.total, p.failed, rate, eta)
}

// finish ends the terminal's line.
func (p *progress) finish() {
	if p.tty && p.finished > 0 {
		fmt.Fprintln(p.w)
	}
}

// heartbeatEvery is how often a long job says something when stderr is
// not a terminal (a CI log): report, mutants, explore and sweep.
const heartbeatEvery = 30 * time.Second

// status is a long job's latest state, for its heartbeat. Set and line
// may be called from any goroutine.
type status struct {
	mu   sync.Mutex
	text string
}

func (s *status) set(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
}

func (s *status) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text
}

// startHeartbeat writes "<label>: <status> (<elapsed>)" to w every period
// until stop is called, when w is not a terminal (on a terminal the jobs
// keep a live line instead). A job never goes quiet in a CI log for more
// than a period.
func startHeartbeat(w io.Writer, period time.Duration, label string, st *status) (stop func()) {
	if stderrIsTerminal(w) {
		return func() {}
	}
	start := time.Now()
	t := time.NewTicker(period)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-t.C:
				fmt.Fprintf(w, "%s: %s (%s so far)\n", label, st.get(), time.Since(start).Round(time.Second))
			case <-quit:
				return
			}
		}
	}()
	return func() {
		t.Stop()
		close(quit)
		wg.Wait()
	}
}

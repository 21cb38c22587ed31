package dst

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Trace is a run's event log: one line per event, in virtual time, in a
// stable text format. Its hash identifies the run. Lines are only appended
// by the goroutine the scheduler released, so their order is deterministic.
type Trace struct {
	header []string
	lines  []string
	keep   bool // keep every line (otherwise only a tail and the hash)
	tail   int
	h      hash.Hash
	text   strings.Builder // the whole trace, when kept
	n      int
	frozen atomic.Bool
	// mu only matters for the ungated negative control: scheduled runs
	// append from one released goroutine at a time.
	mu  sync.Mutex
	buf []byte // add's reused line+newline for the hash
}

// Freeze ends the trace: teardown runs unscheduled, so nothing it does may
// reach the trace.
func (t *Trace) Freeze() { t.frozen.Store(true) }

// Frozen reports whether the trace was frozen.
func (t *Trace) Frozen() bool { return t.frozen.Load() }

// NewTrace returns a trace that keeps all lines when keep is set, else the
// last tail lines.
func NewTrace(keep bool, tail int) *Trace { return &Trace{keep: keep, tail: tail, h: sha256.New()} }

// Header adds a header line (seed, mode, config); headers are hashed too.
func (t *Trace) Header(format string, args ...any) {
	line := "# " + fmt.Sprintf(format, args...)
	t.header = append(t.header, line)
	t.add(line)
}

// Event appends one event line at virtual time at and returns its number
// (1-based, counting header lines).
func (t *Trace) Event(at time.Duration, node, format string, args ...any) int {
	if t.frozen.Load() {
		return 0
	}
	return t.add(fmt.Sprintf("t=%s %s %s", FormatTime(at), node, fmt.Sprintf(format, args...)))
}

// Op appends the line of a released op, byte for byte what
// Event(at, node, "%s %s", kind, id) writes, without fmt: it is the most
// frequent line (one per scheduler step).
func (t *Trace) Op(at time.Duration, node, kind, id string) int {
	if t.frozen.Load() {
		return 0
	}
	if at < 0 {
		return t.Event(at, node, "%s %s", kind, id)
	}
	b := make([]byte, 0, 2+len("mm:ss.mmm")+3+len(node)+len(kind)+len(id))
	b = append(b, "t="...)
	b = appendTime(b, at)
	b = append(b, ' ')
	b = append(b, node...)
	b = append(b, ' ')
	b = append(b, kind...)
	b = append(b, ' ')
	b = append(b, id...)
	return t.add(string(b))
}

func (t *Trace) add(line string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	// One Write of line+"\n" from a reused buffer: the same bytes hashed as
	// before, without two conversions per line.
	t.buf = append(append(t.buf[:0], line...), '\n')
	t.h.Write(t.buf)
	if t.keep {
		t.text.WriteString(line)
		t.text.WriteByte('\n')
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > 2*t.tail && t.tail > 0 {
		t.lines = append(t.lines[:0], t.lines[len(t.lines)-t.tail:]...)
	}
	return t.n
}

// Lines returns how many lines the trace has (the last line's number).
func (t *Trace) Lines() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Hash returns the hex SHA-256 of every line so far (16 bytes shown).
func (t *Trace) Hash() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return hex.EncodeToString(t.h.Sum(nil)[:16])
}

// Text returns the whole trace ("" unless kept).
func (t *Trace) Text() string { return t.text.String() }

// Kept reports whether the trace keeps every line (else only a tail).
func (t *Trace) Kept() bool { return t.keep }

// Numbered returns every line (header lines first), so that line n is
// Numbered()[n-1]; nil unless the trace was kept.
func (t *Trace) Numbered() []string {
	if !t.keep {
		return nil
	}
	return strings.Split(strings.TrimSuffix(t.text.String(), "\n"), "\n")
}

// Tail returns the last n lines.
func (t *Trace) Tail(n int) []string {
	if n > len(t.lines) {
		n = len(t.lines)
	}
	return append([]string(nil), t.lines[len(t.lines)-n:]...)
}

// FormatTime renders a virtual time as mm:ss.mmm.
func FormatTime(d time.Duration) string {
	if d < 0 {
		ms := d.Milliseconds()
		return fmt.Sprintf("%02d:%02d.%03d", ms/60000, (ms/1000)%60, ms%1000)
	}
	return string(appendTime(make([]byte, 0, 9), d))
}

// appendTime appends FormatTime(d) for d >= 0 (what "%02d:%02d.%03d"
// gives) without fmt.
func appendTime(b []byte, d time.Duration) []byte {
	ms := d.Milliseconds()
	pad := func(b []byte, v int64, width int) []byte {
		for w, p := width, int64(10); w > 1; w, p = w-1, p*10 {
			if v < p {
				b = append(b, '0')
			}
		}
		return strconv.AppendInt(b, v, 10)
	}
	b = pad(b, ms/60000, 2)
	b = append(b, ':')
	b = pad(b, (ms/1000)%60, 2)
	b = append(b, '.')
	return pad(b, ms%1000, 3)
}

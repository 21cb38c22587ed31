package dst

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"
)

// The fmt-free trace formatting (FormatTime, Trace.Op) must write exactly
// what the fmt versions wrote: the trace hash depends on every byte.
func TestTraceFormattingMatchesFmt(t *testing.T) {
	for _, d := range []time.Duration{0, 999 * time.Microsecond, time.Millisecond, 9 * time.Millisecond, 10 * time.Millisecond,
		99 * time.Millisecond, 100 * time.Millisecond, 1234 * time.Millisecond, 59999 * time.Millisecond, time.Minute,
		10*time.Minute + 5*time.Second, 99 * time.Minute, 100*time.Minute + 1*time.Millisecond, 1234 * time.Hour, -1500 * time.Millisecond} {
		ms := d.Milliseconds()
		want := fmt.Sprintf("%02d:%02d.%03d", ms/60000, (ms/1000)%60, ms%1000)
		if got := FormatTime(d); got != want {
			t.Errorf("FormatTime(%v) = %q, want %q", d, got, want)
		}
	}
	a, b := NewTrace(true, 10), NewTrace(true, 10)
	for i, d := range []time.Duration{0, 1500 * time.Microsecond, 61 * time.Second, 3 * time.Hour} {
		id := fmt.Sprintf("u%d a%d send r1 u1-m%d", i, i, i)
		a.Event(d, "n1", "%s %s", "redis", id)
		b.Op(d, "n1", "redis", id)
	}
	if a.Text() != b.Text() || a.Hash() != b.Hash() {
		t.Errorf("Trace.Op differs from Event:\n%s\n%s", a.Text(), b.Text())
	}
}

// The inlined FNV-1a must give hash/fnv's values (latencies, fault
// decisions and sub-seeds derive from it).
func TestHashStringMatchesFNV(t *testing.T) {
	for _, s := range []string{"", "a", "faults", "n1|redis|u01 a3 send r1 u01-m1 room:r1:seq", "ü\x00\xff"} {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got, want := HashString(s), h.Sum64(); got != want {
			t.Errorf("HashString(%q) = %x, want %x", s, got, want)
		}
	}
	seed := Seed(0x2a).Derive("cost")
	if got, want := seed.Unit3("n1", "redis", "x y"), seed.Unit("n1|redis|x y"); got != want {
		t.Errorf("unit3 = %v, Unit = %v", got, want)
	}
}

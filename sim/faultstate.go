package sim

import (
	"sync"
	"time"
)

// faultState is the live side of the fault mix: whether faults are on (off
// in the liveness phase), outage windows, and occurrence counters that make
// per-op fault draws independent of arrival order.
type faultState struct {
	mu      sync.Mutex // teardown runs unscheduled: goroutines may race here
	mix     FaultMix
	on      bool
	outages [][2]time.Duration
	spikes  [][3]time.Duration // start, end, extra latency
	counts  map[string]int
	// blipped are the links a blip cut (and its end restores).
	blipped map[[2]string]bool
}

// blip records that a blip cut link l.
func (f *faultState) blip(l [2]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.blipped == nil {
		f.blipped = map[[2]string]bool{}
	}
	f.blipped[l] = true
}

// unblip forgets that a blip cut l and reports whether one had.
func (f *faultState) unblip(l [2]string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.blipped[l]
	delete(f.blipped, l)
	return was
}

func (f *faultState) init(m FaultMix) {
	f.mix, f.on, f.counts = m, true, map[string]int{}
}

// occurrence returns how many times key was seen before (0 the first time).
// Only released goroutines call it, so the count is deterministic.
func (f *faultState) occurrence(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.counts[key]
	f.counts[key] = k + 1
	return k
}

func (f *faultState) redisDown(now time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return false
	}
	for _, w := range f.outages {
		if now >= w[0] && now < w[1] {
			return true
		}
	}
	return false
}

func (f *faultState) addSpike(from, to, extra time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spikes = append(f.spikes, [3]time.Duration{from, to, extra})
}

// spike returns the extra Redis latency at now.
func (f *faultState) spike(now time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return 0
	}
	var d time.Duration
	for _, w := range f.spikes {
		if now >= w[0] && now < w[1] {
			d = max(d, w[2])
		}
	}
	return d
}

package sim

import (
	"sync/atomic"

	"github.com/relaysim/relaysim/system"
)

// probeIndex numbers the relay's code probes (system.Probes) for the
// counters below.
var probeIndex = func() map[string]int {
	m := map[string]int{}
	for i, p := range system.Probes() {
		m[p.Name] = i
	}
	return m
}()

// probeCounts counts the code probes every node incarnation of a run hit
// (system.Deps.Probes). Harness-side coverage, never evidence: the oracle
// does not see it, and it goes neither through the hooks nor into the
// trace. Counting is an atomic add: it parks nothing and starts nothing.
type probeCounts struct {
	hits []atomic.Int64
}

func newProbeCounts() *probeCounts {
	return &probeCounts{hits: make([]atomic.Int64, len(probeIndex))}
}

// Hit implements system.Prober.
func (p *probeCounts) Hit(_, name string) {
	if i, ok := probeIndex[name]; ok {
		p.hits[i].Add(1)
	}
}

// prober is p as the nodes' prober: nil for a cluster without counts.
func (p *probeCounts) prober() system.Prober {
	if p == nil {
		return nil
	}
	return p
}

// snapshot is the probes hit so far and how often (nil: none).
func (p *probeCounts) snapshot() map[string]int {
	if p == nil {
		return nil
	}
	var out map[string]int
	for name, i := range probeIndex {
		if n := p.hits[i].Load(); n > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[name] = int(n)
		}
	}
	return out
}

// Probes is what the cluster's nodes hit so far of the code probes (nil:
// none).
func (c *Cluster) Probes() map[string]int { return c.probes.snapshot() }

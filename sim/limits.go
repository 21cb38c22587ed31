package sim

import (
	"fmt"
	"strings"
)

// NodeLimits are one node's configuration in a mixed cluster, as during a
// config rollout: its payload and recipient limits (system.Config
// MaxPayload, MaxRecipients) and the relay protocol version it starts
// with. Zero keeps the default.
type NodeLimits struct {
	MaxPayload, MaxRecipients, Protocol int
}

// DrawLimits draws whether a seed's cluster is mixed (probability share)
// and, if so, each node's limits and protocol version; nil when it is
// not. Half the nodes, at least one, get a smaller MaxPayload (64..256
// bytes: a padded send may exceed it, sim/workload.go) and a smaller
// MaxRecipients (2..4: a bulk call or stream item to a node with a few
// members may exceed it); each node may start with an older protocol.
// Everything is drawn from seed alone (the seed's "limits" sub-seed), and
// always, so share moves no other draw.
func DrawLimits(seed Seed, nodes int, share float64) []NodeLimits {
	r := seed.Rand()
	mixed := r.Float64() < share
	out := make([]NodeLimits, nodes)
	small := 0
	for i := range out {
		l := NodeLimits{MaxPayload: 64 + r.IntN(193), MaxRecipients: 2 + r.IntN(3), Protocol: 1 + r.IntN(3)}
		if r.IntN(2) == 0 {
			l.MaxPayload, l.MaxRecipients = 0, 0
		} else {
			small++
		}
		if r.IntN(2) == 0 {
			l.Protocol = 0
		}
		out[i] = l
	}
	if pick := r.IntN(nodes); small == 0 || small == nodes {
		// At least one node differs from the others.
		if small == 0 {
			out[pick].MaxPayload, out[pick].MaxRecipients = 64, 2
		} else {
			out[pick].MaxPayload, out[pick].MaxRecipients = 0, 0
		}
	}
	if !mixed {
		return nil
	}
	return out
}

// formatLimits is the trace header's line of a mixed cluster.
func formatLimits(ls []NodeLimits) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		p := fmt.Sprintf("n%d=", i+1)
		if l.MaxPayload == 0 {
			p += "default"
		} else {
			p += fmt.Sprintf("payload<=%d,recipients<=%d", l.MaxPayload, l.MaxRecipients)
		}
		parts[i] = p
	}
	return strings.Join(parts, " ")
}

// protocols are the drawn start versions of a mixed cluster (0: latest).
func protocolsOf(ls []NodeLimits) []int {
	out := make([]int, len(ls))
	for i, l := range ls {
		out[i] = l.Protocol
	}
	return out
}

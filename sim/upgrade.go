package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Upgrade is a rolling upgrade from one relay protocol version to another.
type Upgrade struct{ From, To int }

// ParseUpgrade reads "v1:v3".
func ParseUpgrade(s string) (*Upgrade, error) {
	from, to, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("bad upgrade %q (want FROM:TO, e.g. v1:v3)", s)
	}
	f, err := system.ParseProtocol(from)
	if err != nil {
		return nil, fmt.Errorf("bad upgrade %q: %w", s, err)
	}
	t, err := system.ParseProtocol(to)
	if err != nil {
		return nil, fmt.Errorf("bad upgrade %q: %w", s, err)
	}
	return &Upgrade{From: f, To: t}, nil
}

func (u *Upgrade) String() string { return fmt.Sprintf("v%d:v%d", u.From, u.To) }

// ParseVersions reads "v1,v2,v3" (one per node, from n1).
func ParseVersions(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := system.ParseProtocol(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// startVersions is what each node starts with: Versions, or the upgrade's
// From for every node.
func (c Config) startVersions() []int {
	if c.Upgrade == nil {
		return c.Versions
	}
	out := make([]int, c.Nodes)
	for i := range out {
		out[i] = c.Upgrade.From
	}
	return out
}

// plan adds the upgrade's steps to a fault plan: node i is restarted with
// To at (i+1)/(nodes+1) of the load phase.
func (u *Upgrade) plan(fs []Fault, nodes int, load time.Duration) []Fault {
	if u == nil {
		return fs
	}
	for i := range nodes {
		at := (load * time.Duration(i+1) / time.Duration(nodes+1)).Truncate(time.Millisecond)
		fs = append(fs, Fault{At: at, Kind: model.FaultUpgrade, Node: i, Protocol: u.To})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

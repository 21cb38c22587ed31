package realcluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relaysim/relaysim/model"
)

// Nemesis kinds, as they appear in -nemesis and in the history's faults:
// model's fault kinds, so that a real run's history reads like a
// simulated one's.
const (
	KindKill   = model.FaultKill         // SIGKILL a relayd, restart it with -takeover
	KindPause  = model.FaultPause        // SIGSTOP a relayd, SIGCONT it later
	KindTerm   = model.FaultTerm         // SIGTERM a relayd (graceful), restart it
	KindRedis  = model.FaultRedisRestart // SIGKILL redis-server, restart it on its AOF
	KindDelay  = model.FaultLinkDelay    // delay one direction between two nodes
	KindDrop   = model.FaultLinkDrop     // reset and refuse one direction's connections
	KindCut    = model.FaultLinkCut      // black-hole one direction (bytes held, not lost)
	KindForged = model.FaultForge        // a client call with a forged credential
)

// Kinds lists every nemesis kind in plan order.
var Kinds = []model.FaultKind{KindKill, KindPause, KindTerm, KindRedis, KindDelay, KindDrop, KindCut, KindForged}

// kindNames lists Kinds' names, for messages.
func kindNames() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Config is one real run.
type Config struct {
	Seed     uint64
	Duration time.Duration // the load phase, with the nemesis on
	Drain    time.Duration // the most the liveness phase waits to settle
	Nodes    int
	Users    int
	Rooms    int
	// RoomsPerUser is how many rooms each user joins at the start.
	RoomsPerUser int
	Rate         float64 // sends per second, all users together
	Churn        float64 // joins, leaves, reconnects per second
	Mode         string  // relay mode
	// Nemesis are the kinds the nemesis may inject; Faults bounds how many
	// it injects in all (0: none).
	Nemesis []model.FaultKind
	Faults  int
	// Relayd is the relayd binary; RedisServer the redis-server binary
	// (used unless RedisAddr names a running Redis).
	Relayd      string
	RedisServer string
	RedisAddr   string
	// Flush allows wiping a non-empty Redis at RedisAddr.
	Flush bool
	// Dir receives the history, the processes' logs and Redis' files.
	Dir string
}

// DefaultConfig is a 3-node run of 60 s with every nemesis kind.
func DefaultConfig() Config {
	return Config{
		Seed: 0x2a, Duration: 60 * time.Second, Drain: 45 * time.Second,
		Nodes: 3, Users: 9, Rooms: 3, RoomsPerUser: 2, Rate: 20, Churn: 1,
		Mode: "bulk", Nemesis: slices.Clone(Kinds), Faults: 12,
	}
}

// ParseNemesis reads a nemesis spec: "all", "none", or a comma-separated
// list of kinds.
func ParseNemesis(s string) ([]model.FaultKind, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return slices.Clone(Kinds), nil
	case "none", "":
		return nil, nil
	}
	var out []model.FaultKind
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		k, err := model.ParseFaultKind(name)
		if err != nil || !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("unknown nemesis kind %q (want all, none or a list of %s)", name, kindNames())
		}
		if slices.Contains(out, k) {
			return nil, fmt.Errorf("nemesis kind %q given twice", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// Validate reports the first bad setting.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 1 || c.Nodes > 9:
		return fmt.Errorf("-nodes %d: want 1 to 9", c.Nodes)
	case c.Users < 1 || c.Users > 200:
		return fmt.Errorf("-users %d: want 1 to 200", c.Users)
	case c.Rooms < 1 || c.Rooms > 100:
		return fmt.Errorf("-rooms %d: want 1 to 100", c.Rooms)
	case c.RoomsPerUser < 1:
		return fmt.Errorf("-rooms-per-user %d: want at least 1", c.RoomsPerUser)
	case c.Duration < time.Second || c.Duration > 24*time.Hour:
		return fmt.Errorf("-duration %v: want 1s to 24h", c.Duration)
	case c.Drain < time.Second || c.Drain > time.Hour:
		return fmt.Errorf("-drain %v: want 1s to 1h", c.Drain)
	case c.Rate <= 0 || c.Rate > 1000:
		return fmt.Errorf("-rate %g: want above 0, at most 1000", c.Rate)
	case c.Churn < 0 || c.Churn > 100:
		return fmt.Errorf("-churn %g: want 0 to 100", c.Churn)
	case c.Faults < 0 || c.Faults > 1000:
		return fmt.Errorf("-faults %d: want 0 to 1000", c.Faults)
	case c.Relayd == "":
		return errors.New("no relayd binary")
	case c.RedisAddr == "" && c.RedisServer == "":
		return errors.New("no redis-server: install it (apt-get install redis-server) or give -redis ADDR")
	case c.Dir == "":
		return errors.New("no output directory")
	}
	for _, k := range c.Nemesis {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("unknown nemesis kind %q", k)
		}
	}
	if c.RedisAddr != "" && slices.Contains(c.Nemesis, KindRedis) {
		return fmt.Errorf("nemesis %s needs a redis-server the runner starts itself, not -redis %s", KindRedis, c.RedisAddr)
	}
	if c.Nodes < 2 {
		for _, k := range []model.FaultKind{KindDelay, KindDrop, KindCut} {
			if slices.Contains(c.Nemesis, k) {
				return fmt.Errorf("nemesis %s needs at least 2 nodes", k)
			}
		}
	}
	return nil
}

package scenarios

import (
	"errors"
	"fmt"
	"time"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// handleCluster starts the cluster every later command acts on, in the
// mode the harness plays the file in: nodes=N relay nodes (default 3) over
// one miniredis, seed=S for the scheduler's picks and the operations'
// latencies (default 1), the seeds' LAN-like cost model, a small pool
// (core 2, max 8, queue 16) so that saturation is reachable, and no fault
// but those the file applies. versions= gives the relay protocol each node
// starts with, from n1 (v1 single only, v2 adds bulk, v3 adds stream;
// default the latest): a node relays in the best mode both ends speak, up
// to the file's mode. legacy= gives, from n1, the behaviours of builds
// before the fixes each node runs with (system.Legacy: all, none, or some
// of names, idempotency and deregister joined by '+'; default none): the
// unfixed nodes beside fixed ones of a rolling upgrade. relays=all makes
// the file tell every relay call, not only those that failed or were
// retried.
//
// Example:
//
//	cluster nodes=4 versions=v1,v1,v2,v3
//	cluster nodes=3 legacy=all,names+idempotency,none
func (e *Env) handleCluster(a *args) (string, error) {
	if e.c != nil {
		return "", errors.New("cluster: a file starts one cluster")
	}
	nodes := a.integer("nodes", 3)
	seed := sim.Seed(1)
	if s := a.str("seed", false); s != "" {
		var err error
		if seed, err = sim.ParseSeed(s); err != nil {
			a.fail("seed=%s: %v", s, err)
		}
	}
	switch r := a.str("relays", false); r {
	case "", "failed":
	case "all":
		e.allRelays = true
	default:
		a.fail("relays=%s, want all or failed", r)
	}
	versions := a.versions("versions")
	if len(versions) > nodes {
		a.fail("versions= names %d nodes, the cluster has %d", len(versions), nodes)
	}
	legacy := a.legacies("legacy")
	if len(legacy) > nodes {
		a.fail("legacy= names %d nodes, the cluster has %d", len(legacy), nodes)
	}
	if a.err != nil {
		return "", nil
	}
	if nodes < 1 || nodes > 9 {
		return "", fmt.Errorf("cluster: nodes=%d, want 1 to 9", nodes)
	}
	cost := sim.DefaultCost()
	cfg := sim.ClusterConfig{
		Seed: seed, Mode: e.Mode, Nodes: nodes, Versions: versions, Legacy: legacy,
		Executor: system.ExecutorConfig{Core: 2, Max: 8, Queue: 16, KeepAlive: 10 * time.Second},
		Node:     func(nc *system.Config) { nc.OutboxSize = 64 },
		Cost:     cost,
		Strategy: &sim.Random{C: seed.Derive("scheduler").Rand()},
		Trace:    sim.NewTrace(true, 200),
		Story:    true,
	}
	if e.explorer != nil {
		// Under the model checker: zero latency, the explorer's choices,
		// no liveness traffic of its own (the story is the traffic). The
		// bounds below still come from the cost model, so timely delivery
		// keeps its bound.
		cfg.Strategy, cfg.Explorer, cfg.NoRecoveryTraffic = dst.First{}, e.explorer, true
		cfg.Trace = sim.NewTrace(e.explorer.Replay != nil, 200) // a replay keeps it all
		// Workers above core retire after 1 s (not 10): the drain after
		// the horizon waits out the keep-alive, and every schedule pays it.
		cfg.Executor.KeepAlive = time.Second
	}
	c, err := sim.NewCluster(cfg)
	e.c = c // closed by Close even when a node failed to start
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	c.SetBounds(cost, 0)
	return e.news(), nil
}

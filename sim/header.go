package sim

import (
	"fmt"
	"strings"
)

// This file writes a run's trace header: what the run is (seed, mode,
// scheduler, cluster, workload, protocols, the fault mix and plan, the cost
// model). Headers are hashed with the trace.

func header(t *Trace, cfg Config, res *Result, s Strategy, actions int) {
	t.Header("relaysim seed=%s mode=%s scheduler=%s", cfg.Seed, cfg.Mode, s.Name())
	t.Header("cluster nodes=%d users=%d rooms=%d pool=%d/%d/%d keepalive=%v channels=%d", cfg.Nodes, cfg.Users, cfg.Rooms,
		cfg.Executor.Core, cfg.Executor.Max, cfg.Executor.Queue, cfg.Executor.KeepAlive, res.Channels)
	if res.StreamBacklog > 0 && cfg.Mode == "stream" {
		t.Header("stream backlog=%d", res.StreamBacklog)
	}
	t.Header("workload duration=%v drain=%v rate=%.1f/s churn=%.1f/s tick=%v actions=%d%s%s", cfg.Duration, cfg.Drain, cfg.Rate, cfg.Churn, cfg.Tick, actions,
		map[bool]string{true: " calm"}[cfg.Calm], map[bool]string{true: " churn-only"}[cfg.ChurnOnly])
	if res.Limits != nil {
		t.Header("mixed %s", formatLimits(res.Limits))
	}
	if v := cfg.startVersions(); len(v) > 0 {
		upgrade := ""
		if cfg.Upgrade != nil {
			upgrade = " upgrade=" + cfg.Upgrade.String()
		}
		t.Header("protocols %s%s", formatVersions(v), upgrade)
	}
	t.Header("faults %s", res.Mix)
	for _, f := range res.Faults {
		t.Header("fault at %s: %s", FormatTime(f.At), f)
	}
	t.Header("cost %s", res.Cost)
	if cfg.CPU != nil {
		t.Header("cpu %s", cfg.CPU)
	}
}

func formatVersions(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("n%d=v%d", i+1, v)
	}
	return strings.Join(parts, " ")
}

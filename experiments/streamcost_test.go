package experiments

import (
	"flag"
	"testing"
	"time"

	"github.com/relaysim/relaysim/system"
)

var streamCost = flag.Bool("streamcost", false, "run TestStreamVsBulkCostModel (a minute or two of wall time)")

// TestStreamVsBulkCostModel runs the seed's heaviest condition (room 150 at
// 50 msg/s) on the calibrated cost model in bulk and stream mode, side by
// side, and logs the report's figures for BENCHMARKS.md. Behind
// -streamcost: it measures, it asserts only that both delivered everything.
//
//	go test ./experiments -run TestStreamVsBulkCostModel -streamcost -v
func TestStreamVsBulkCostModel(t *testing.T) {
	if !*streamCost {
		t.Skip("behind -streamcost")
	}
	o := Short()
	o.Load, o.Drain, o.T = 20*time.Second, 10*time.Second, t
	c := AxisB()[2]
	for _, m := range []system.Mode{system.ModeBulk, system.ModeStream} {
		r := RunCondition(o, c, m)
		t.Logf("%s %s: %d msgs, delivered %.1f%%, tasks/s %.0f (formula %.0f), peak busy workers %d, p50 %.1f ms, p95 %.1f ms, max %.1f ms, cpu %.0f%%",
			c, m, r.Messages, r.Delivered, r.Tasks, r.Formula, r.Peak, r.P50, r.P95, r.Max, 100*r.CPU)
		if r.Delivered < 100 {
			t.Errorf("%s: delivered %.1f%%", m, r.Delivered)
		}
	}
}

package experiments

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
)

// The pool chart's points are the seconds of the load: the sample taken as
// the load starts covers the warm-up's last second and is left out, and
// the sample one second in is plotted at 1 s.
func TestPoolSecondsStartWithTheLoad(t *testing.T) {
	var samples []model.Sample
	for s := 0; s <= 5; s++ {
		at := time.Duration(s) * time.Second
		samples = append(samples,
			model.Sample{Time: at, Node: "n1", PeakRunning: 10 * s},
			model.Sample{Time: at, Node: "n2", PeakRunning: 3})
	}
	_, pools, peak := taskRate(samples, &taskClock{}, 3*time.Second)
	assert.Equal(t, []PoolSecond{{At: time.Second, Busy: 30}, {At: 2 * time.Second, Busy: 40}, {At: 3 * time.Second, Busy: 50}}, pools)
	assert.Equal(t, 50, peak)
}

// The chart says what it plots (a per-second peak), draws the pool's core
// and max, and labels its ticks without needless decimals.
func TestPoolChart(t *testing.T) {
	var pool []PoolSecond
	for s := 1; s <= 180; s++ {
		busy := 0
		if s <= 120 {
			busy = 200
		}
		pool = append(pool, PoolSecond{At: time.Duration(s) * time.Second, Busy: busy})
	}
	rows := []Row{
		{Condition: "room 150, 50 msg/s", Mode: "single", Pool: pool, Tasks: 7500, SeedTasks: 7300},
		{Condition: "room 150, 50 msg/s", Mode: "bulk", Pool: pool[:10], Tasks: 2600, SeedTasks: 2300},
	}
	dir := t.TempDir()
	files, err := Plot(Report{AxisB: rows}, dir)
	require.NoError(t, err)
	require.Contains(t, files, filepath.Join(dir, "pool-axis-b.png"))
	svg := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		require.NoError(t, err)
		return string(b)
	}
	pools := svg("pool-axis-b")
	for _, want := range []string{"peak busy workers per second", "core 30", "max 200", ">200<", ">100<"} {
		assert.Contains(t, pools, want)
	}
	assert.Contains(t, svg("tasks-axis-b"), ">5000<")
	decimals := regexp.MustCompile(`>-?[0-9]+\.0+<`)
	for _, name := range []string{"pool-axis-b", "tasks-axis-b", "latency-axis-b"} {
		assert.Empty(t, decimals.FindAllString(svg(name), -1), "%s: tick labels with needless decimals", name)
	}
}

// The pool panel's time axis ends a little after the last busy second,
// not at the end of the drain: with 120 s of load and 60 s of idle drain
// the load fills the panel.
func TestPoolPanelEndsAfterTheLoad(t *testing.T) {
	var pool []PoolSecond
	for s := 1; s <= 180; s++ {
		busy := 0
		if s <= 120 {
			busy = 40
		}
		pool = append(pool, PoolSecond{At: time.Duration(s) * time.Second, Busy: busy})
	}
	rows := []Row{{Mode: "single", Pool: pool}, {Mode: "bulk", Pool: pool[:60]}}
	assert.Equal(t, 132.0, poolEnd(rows))
	p, err := poolPanel(rows)
	require.NoError(t, err)
	assert.Equal(t, 132.0, p.X.Max)
	idle := []Row{{Mode: "single", Pool: []PoolSecond{{At: time.Second}, {At: 5 * time.Second}}}}
	assert.Equal(t, 5.0, poolEnd(idle), "never busy: the whole run")
}

// No bar runs past the y axis: it ends above the tallest bar with room
// for the legend.
func TestBarChartFitsItsBars(t *testing.T) {
	rows := []Row{
		{Condition: "a", Mode: "single", P95: 12, SeedP95: 900},
		{Condition: "a", Mode: "bulk", P95: 3100, SeedP95: 40},
	}
	p, err := barChart("p95", "ms", rows, func(r Row) (float64, float64) { return r.P95, r.SeedP95 })
	require.NoError(t, err)
	assert.Equal(t, 0.0, p.Y.Min)
	assert.GreaterOrEqual(t, p.Y.Max, 3100*1.3)
}

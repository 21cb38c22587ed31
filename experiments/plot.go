package experiments

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	colSingle = color.RGBA{R: 200, G: 60, B: 40, A: 255}
	colBulk   = color.RGBA{R: 40, G: 90, B: 190, A: 255}
	colSeedS  = color.RGBA{R: 240, G: 170, B: 150, A: 255}
	colSeedB  = color.RGBA{R: 150, G: 180, B: 240, A: 255}
)

// Plot writes the report's charts to dir as PNG and SVG: the peak of busy
// workers per second (Row.Pool) over virtual time (single vs bulk, one
// panel per condition, as in the seed), Tasks/s per condition, latency percentiles, and the Scenario 2
// curve. It returns the files written.
func Plot(rep Report, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	save := func(name string, plots []*plot.Plot, w, h vg.Length) error {
		for _, ext := range []string{"png", "svg"} {
			path := filepath.Join(dir, name+"."+ext)
			if err := saveRow(plots, w, h, path, ext); err != nil {
				return err
			}
			files = append(files, path)
		}
		return nil
	}
	for _, ax := range []struct {
		name string
		rows []Row
	}{{"axis-a", rep.AxisA}, {"axis-b", rep.AxisB}} {
		if len(ax.rows) == 0 {
			continue
		}
		var panels []*plot.Plot
		for i := 0; i+1 < len(ax.rows); i += 2 {
			p, err := poolPanel(ax.rows[i : i+2])
			if err != nil {
				return files, err
			}
			panels = append(panels, p)
		}
		if err := save("pool-"+ax.name, panels, vg.Length(len(panels))*10*vg.Centimeter, 9*vg.Centimeter); err != nil {
			return files, err
		}
		tp, err := barChart("Tasks/s, "+ax.name+" (ours vs seed)", "tasks/s", ax.rows, func(r Row) (float64, float64) { return r.Tasks, r.SeedTasks })
		if err != nil {
			return files, err
		}
		lp, err := barChart("p95 delivery latency, "+ax.name+" (ours vs seed)", "ms", ax.rows, func(r Row) (float64, float64) { return r.P95, r.SeedP95 })
		if err != nil {
			return files, err
		}
		if err := save("tasks-"+ax.name, []*plot.Plot{tp}, 16*vg.Centimeter, 9*vg.Centimeter); err != nil {
			return files, err
		}
		if err := save("latency-"+ax.name, []*plot.Plot{lp}, 16*vg.Centimeter, 9*vg.Centimeter); err != nil {
			return files, err
		}
	}
	if len(rep.Scenario2) > 0 {
		p, err := scenario2Chart(rep.Scenario2)
		if err != nil {
			return files, err
		}
		if err := save("scenario2", []*plot.Plot{p}, 14*vg.Centimeter, 9*vg.Centimeter); err != nil {
			return files, err
		}
	}
	return files, nil
}

// poolPanel is one condition: the busiest node's peak of busy workers in
// each second over virtual time, single and bulk, on the seed's fixed y
// range, with the pool's core and max as reference lines.
func poolPanel(rows []Row) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = rows[0].Condition
	p.X.Label.Text = "virtual time since load start (s)"
	p.Y.Label.Text = "peak busy workers per second, busiest node"
	p.Y.Min, p.Y.Max = 0, 210
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	end := poolEnd(rows)
	p.X.Min, p.X.Max = 0, end
	for _, r := range rows {
		var pts plotter.XYs
		for _, s := range r.Pool {
			if x := s.At.Seconds(); x <= end {
				pts = append(pts, plotter.XY{X: x, Y: float64(s.Busy)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = colBulk
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)} // single shows through where both are at core
		if r.Mode == "single" {
			l.Color, l.Dashes = colSingle, nil
		}
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(r.Mode, l)
	}
	for _, ref := range []struct {
		name string
		at   int
	}{{"max", pool.Max}, {"core", pool.Core}} {
		if err := referenceLine(p, ref.name, float64(ref.at), end); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = true
	p.Legend.YOffs = -12 * vg.Millimeter // below the max line
	return p, nil
}

// poolEnd is where a pool panel's time axis ends: a little after the last
// second any mode had a busy worker, so that the drain's idle seconds (a
// flat zero, most of a full-length run) do not squeeze the load into a
// corner; the whole run when the pool was never busy.
func poolEnd(rows []Row) float64 {
	last, end := 0.0, 0.0
	for _, r := range rows {
		for _, s := range r.Pool {
			end = max(end, s.At.Seconds())
			if s.Busy > 0 {
				last = max(last, s.At.Seconds())
			}
		}
	}
	if last == 0 {
		return end
	}
	return min(end, last+max(2, last/10))
}

// referenceLine draws a thin grey dotted horizontal line at y across
// [0, end], named in the legend ("max 200"): the legend sits over the
// drain, where nothing else is drawn.
func referenceLine(p *plot.Plot, name string, y, end float64) error {
	if end <= 0 {
		return nil
	}
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: end, Y: y}})
	if err != nil {
		return err
	}
	l.Color, l.Width = color.Gray{Y: 120}, vg.Points(1)
	l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("%s %d", name, int(y)), l)
	return nil
}

// plainTicks are gonum's default ticks with labels in the fewest digits
// that say them (7500, 0.5), not a common precision (7500.00).
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// barChart groups per condition: ours single, seed single, ours bulk, seed bulk.
func barChart(title, unit string, rows []Row, val func(Row) (ours, seed float64)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.Y.Tick.Marker = plainTicks{}
	var names []string
	series := map[string]plotter.Values{}
	for _, r := range rows {
		if r.Mode == "single" {
			names = append(names, r.Condition)
		}
		o, s := val(r)
		series["ours "+r.Mode] = append(series["ours "+r.Mode], o)
		series["seed "+r.Mode] = append(series["seed "+r.Mode], s)
	}
	// The y axis ends above the tallest bar with room for the legend, so
	// no bar runs into the title or under the legend.
	tallest := 0.0
	for _, vs := range series {
		for _, v := range vs {
			tallest = max(tallest, v)
		}
	}
	p.Y.Min, p.Y.Max = 0, barTop(tallest)
	w := vg.Points(9)
	order := []struct {
		name string
		col  color.Color
	}{{"ours single", colSingle}, {"seed single", colSeedS}, {"ours bulk", colBulk}, {"seed bulk", colSeedB}}
	for i, o := range order {
		b, err := plotter.NewBarChart(series[o.name], w)
		if err != nil {
			return nil, err
		}
		b.Color = o.col
		b.LineStyle.Width = 0
		b.Offset = vg.Length(i-2)*w + w/2
		p.Add(b)
		p.Legend.Add(o.name, b)
	}
	p.Legend.Top, p.Legend.Left = true, true // the first condition has the shortest bars
	p.NominalX(names...)
	return p, nil
}

// barTop is a bar chart's y axis end for its tallest bar: a third above it
// (the legend's rows sit there).
func barTop(tallest float64) float64 {
	if tallest <= 0 {
		return 1
	}
	return tallest * 4 / 3
}

func scenario2Chart(rows []Fanout) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Scenario 2: bulk relay to 3 remote nodes"
	p.X.Label.Text = "relay pool size (workers)"
	p.Y.Label.Text = "fan-out time, mean (ms)"
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	cols := []color.Color{colSingle, colBulk, color.RGBA{G: 140, B: 60, A: 255}}
	for i, u := range usersOf(rows) {
		var ours, seed plotter.XYs
		for _, f := range rows {
			if f.Users == u {
				ours = append(ours, plotter.XY{X: float64(f.Workers), Y: f.Mean})
				seed = append(seed, plotter.XY{X: float64(f.Workers), Y: f.Seed})
			}
		}
		lo, err := plotter.NewLine(ours)
		if err != nil {
			return nil, err
		}
		lo.Color, lo.Width = cols[i%len(cols)], vg.Points(1.5)
		ls, err := plotter.NewLine(seed)
		if err != nil {
			return nil, err
		}
		ls.Color, ls.Dashes = cols[i%len(cols)], []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(lo, ls)
		p.Legend.Add(fmt.Sprintf("%d users (ours)", u), lo)
		p.Legend.Add(fmt.Sprintf("%d users (seed)", u), ls)
	}
	p.Legend.Top = true
	return p, nil
}

// saveRow draws plots side by side on one canvas and writes it as ext.
func saveRow(plots []*plot.Plot, w, h vg.Length, path, ext string) error {
	var c draw.Canvas
	var write func(f *os.File) error
	switch ext {
	case "png":
		img := vgimg.New(w, h)
		c = draw.New(img)
		write = func(f *os.File) error { _, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f); return err }
	default:
		svg := vgsvg.New(w, h)
		c = draw.New(svg)
		write = func(f *os.File) error { _, err := svg.WriteTo(f); return err }
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, c)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

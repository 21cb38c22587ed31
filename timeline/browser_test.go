package timeline

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

var screenshot = flag.String("timeline.screenshot", "", "also write the browser test's screenshot to this PNG file")

// chromium finds a headless browser, or skips the test saying what to
// install (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the page is not opened in a browser")
	return ""
}

// browse runs the browser headless on file with args and returns what it
// printed on stdout and stderr.
func browse(t *testing.T, bin, file string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+file)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium: %s", errb.String())
	return out.String(), errb.String()
}

// failingRun is a real run (seed 0x2a, bulk, wide names: some 128 bytes
// long) judged with violations crafted late in it: 30 of two properties,
// each naming an acked send of the run's last fifth and citing its trace
// line, the first the latest of them. The page must open far from the
// run's start, on evidence that is really there.
func failingRun(t *testing.T) (Input, *sim.Result) {
	cfg := sim.DefaultConfig()
	cfg.Names, cfg.KeepTrace = sim.NamesWide, true
	res := sim.Run(t, cfg)
	require.NoError(t, res.Err)
	h := res.History
	var late []model.Event
	for _, e := range h.Events {
		if e.Kind == model.KindSend && e.OK && e.Time > runEnd(h)*4/5 {
			late = append(late, e)
		}
	}
	require.NotEmpty(t, late, "acked sends in the run's last fifth")
	var vs []model.Violation
	for i := range 30 {
		e := late[len(late)-1-i%len(late)]
		prop := []string{model.PropNoLoss, model.PropOrdering}[i%3/2]
		vs = append(vs, model.Violation{Property: prop, User: e.User, Room: e.Room, Seq: e.Seq,
			Detail: "crafted for the browser test", TraceLines: []int{e.TraceLine}})
	}
	text := strings.Split(strings.TrimSuffix(res.Trace.Text(), "\n"), "\n")
	n := res.Counts()
	return Input{Title: "relaysim run seed=0x2a mode=bulk (crafted violations)", History: h, Violations: vs,
		Trace: text, Counts: &n}, res
}

// TestTimelineInBrowser opens a failing run's page in headless Chromium:
// its script runs to the end with no console message (the page logs
// nothing, so any console line is an error); the page opens on the first
// violation's window, with its evidence on the screen; the counts shown
// are the run's; the labels drawn overlap nowhere and every name drawn is
// short.
func TestTimelineInBrowser(t *testing.T) {
	bin := chromium(t)
	in, res := failingRun(t)
	file := filepath.Join(t.TempDir(), "timeline.html")
	var b bytes.Buffer
	require.NoError(t, Write(&b, in))
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))

	dom, logs := browse(t, bin, file, "--window-size=1400,900", "--dump-dom")
	for _, l := range strings.Split(logs, "\n") {
		assert.NotContains(t, l, ":CONSOLE", "the page printed to the console")
	}
	doc, err := html.Parse(strings.NewReader(dom))
	require.NoError(t, err)
	body := find(doc, func(n *html.Node) bool { return n.Data == "body" })[0]
	assert.Equal(t, "yes", attr(body, "data-ready"), "the page's script ran to its end")

	main := find(doc, func(n *html.Node) bool { return attr(n, "id") == "main" })[0]
	var a, z, w float64
	_, err = fmt.Sscanf(attr(main, "data-view"), "%g %g", &a, &z)
	require.NoError(t, err, "the script says which window it shows")
	_, err = fmt.Sscanf(attr(main, "data-width"), "%g", &w)
	require.NoError(t, err)
	end, _ := strconv.ParseFloat(attr(main, "data-end"), 64)
	assert.Greater(t, a, end/2, "the page opens on the late violation, not on the run's start")
	assert.Less(t, z-a, end/4, "zoomed in on it")
	shift, err := strconv.ParseFloat(attr(main, "data-shift"), 64)
	require.NoError(t, err, "how far the layer of marks is shifted")
	ev := find(doc, func(n *html.Node) bool { return hasClass(n, "evidence") })
	require.NotEmpty(t, ev)
	for _, n := range ev {
		x := attr(n, "x") + attr(n, "cx") + attr(n, "x1")
		f, err := strconv.ParseFloat(x, 64)
		require.NoError(t, err, "evidence placed: <%s %v>", n.Data, n.Attr)
		assert.True(t, f+shift >= 0 && f+shift <= w, "evidence at x=%g within the %g pixels shown", f+shift, w)
	}
	assert.Equal(t, fmt.Sprintf("%d/%d", len(ev), len(ev)), attr(body, "data-evidence-in-view"),
		"every mark of the first violation's evidence is on the screen")

	n := res.Counts()
	for key, want := range map[string]int{"users": n.Users, "acked": n.Acked, "deliveries": n.Deliveries, "faults": n.Faults} {
		got := find(doc, func(n *html.Node) bool { return attr(n, "data-count") == key })
		require.Len(t, got, 1, key)
		assert.Equal(t, strconv.Itoa(want), got[0].FirstChild.Data, key)
	}

	type span struct{ a, b float64 }
	rows := map[string][]span{}
	shown := 0
	for _, l := range find(doc, func(n *html.Node) bool { return hasClass(n, "olabel") && !hasClass(n, "hidden") }) {
		x, _ := strconv.ParseFloat(attr(l, "x"), 64)
		x += shift
		lw, _ := strconv.ParseFloat(attr(l, "data-w"), 64)
		require.Positive(t, lw, "a label's measured width")
		assert.True(t, x >= 0 && x+lw <= w, "a label wholly on the screen: %g+%g of %g", x, lw, w)
		for _, o := range rows[attr(l, "y")] {
			assert.True(t, x+lw <= o.a || x >= o.b, "labels overlap at x=%g", x)
		}
		rows[attr(l, "y")] = append(rows[attr(l, "y")], span{x, x + lw})
		shown++
	}
	assert.Positive(t, shown, "some labels are drawn")
	for _, l := range find(doc, func(n *html.Node) bool { return hasClass(n, "lane-label") }) {
		assert.LessOrEqual(t, utf8.RuneCountInString(l.FirstChild.Data), labelRunes+1, "a lane's label is short")
	}

	png := filepath.Join(t.TempDir(), "shot.png")
	browse(t, bin, file, "--window-size=1400,900", "--screenshot="+png)
	shot, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(shot, []byte("\x89PNG")), "a PNG screenshot")
	if *screenshot != "" {
		require.NoError(t, os.WriteFile(*screenshot, shot, 0o644))
	}
}

// probe is a script the zoom test adds to a page: it presses fit, then +,
// moves the window by the overview strip, turns the wheel, drags the
// drawing, and picks the last violation in the list, noting the window
// (main's data-view) after each step.
const probe = `<script>
setTimeout(function () {
  var main = document.getElementById("main"), out = [main.dataset.view];
  function then(f) { setTimeout(f, 100); }
  document.querySelector('button[data-zoom="fit"]').click();
  then(function () {
    out.push(main.dataset.view);
    document.querySelector('button[data-zoom="in"]').click();
    then(function () {
      out.push(main.dataset.view);
      var ov = document.getElementById("overview").getBoundingClientRect();
      ov.x0 = ov.left + ov.width / 4;
      document.getElementById("overview").dispatchEvent(new MouseEvent("mousedown", { clientX: ov.x0, bubbles: true }));
      window.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
      then(function () {
        out.push(main.dataset.view);
        var m = main.getBoundingClientRect(), mid = m.left + m.width / 2;
        main.dispatchEvent(new WheelEvent("wheel", { deltaY: -100, clientX: mid, clientY: m.top + 50, bubbles: true, cancelable: true }));
        then(function () {
          out.push(main.dataset.view);
          main.dispatchEvent(new MouseEvent("mousedown", { clientX: mid, clientY: m.top + 50, bubbles: true }));
          window.dispatchEvent(new MouseEvent("mousemove", { clientX: mid + m.width / 10, clientY: m.top + 50, bubbles: true }));
          window.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
          then(function () {
            out.push(main.dataset.view);
            var a = document.querySelectorAll("#violations a[data-v]");
            a[a.length - 1].click();
            out.push(main.dataset.view);
            document.body.dataset.probe = out.join(";");
          });
        });
      });
    });
  });
}, 50);
</script>
</body>`

// TestTimelineZoomsInBrowser drives the page's controls in Chromium: fit
// shows the whole run, + halves the window about its middle, a click on
// the overview strip centers the window there, the wheel zooms about the
// pointer, a drag pans, and a violation picked in the list shows its own
// window.
func TestTimelineZoomsInBrowser(t *testing.T) {
	bin := chromium(t)
	in := late()
	var b bytes.Buffer
	require.NoError(t, Write(&b, in))
	file := filepath.Join(t.TempDir(), "timeline.html")
	require.NoError(t, os.WriteFile(file, bytes.Replace(b.Bytes(), []byte("</body>"), []byte(probe), 1), 0o644))
	dom, _ := browse(t, bin, file, "--window-size=1400,900", "--dump-dom")
	doc, err := html.Parse(strings.NewReader(dom))
	require.NoError(t, err)
	body := find(doc, func(n *html.Node) bool { return n.Data == "body" })[0]
	steps := strings.Split(attr(body, "data-probe"), ";")
	require.Len(t, steps, 7, "the probe ran: %q", attr(body, "data-probe"))
	assert.Equal(t, "59000 60510", steps[0], "opened on the first violation")
	assert.Equal(t, "0 60510", steps[1], "fit: the whole run")
	assert.Equal(t, "15127.5 45382.5", steps[2], "+: half of it, about its middle")
	var a, z float64
	_, err = fmt.Sscanf(steps[3], "%g %g", &a, &z)
	require.NoError(t, err)
	assert.InDelta(t, 60510.0/4, (a+z)/2, 60510.0/100, "the strip's first quarter, centered")
	assert.InDelta(t, 30255, z-a, 1, "moving keeps the zoom")
	var a2, z2 float64
	_, err = fmt.Sscanf(steps[4], "%g %g", &a2, &z2)
	require.NoError(t, err)
	assert.InDelta(t, 0.8*(z-a), z2-a2, 1, "the wheel zooms in by a fifth")
	assert.InDelta(t, (a+z)/2, (a2+z2)/2, (z-a)/200, "about the pointer, in the middle (to a pixel or so)")
	var a3, z3 float64
	_, err = fmt.Sscanf(steps[5], "%g %g", &a3, &z3)
	require.NoError(t, err)
	assert.InDelta(t, a2-(z2-a2)/10, a3, (z2-a2)/200, "dragging right by a tenth of the width shows a tenth earlier")
	assert.InDelta(t, z2-a2, z3-a3, 1)
	assert.Equal(t, "0 1050", steps[6], "the last violation's own window")
}

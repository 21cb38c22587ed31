package timeline

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestTimelineInBrowser opens a failing run's page in headless Chromium:
// its script runs to the end with no console message (the page logs
// nothing, so any console line is an error), and the rendered page shows
// the violation and marks its evidence.
func TestTimelineInBrowser(t *testing.T) {
	bin := chromium(t)
	file := filepath.Join(t.TempDir(), "timeline.html")
	var b bytes.Buffer
	require.NoError(t, Write(&b, story()))
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))

	dom, logs := browse(t, bin, file, "--dump-dom")
	for _, l := range strings.Split(logs, "\n") {
		assert.NotContains(t, l, ":CONSOLE", "the page printed to the console")
	}
	assert.Contains(t, dom, `data-ready="yes"`, "the page's script ran to its end")
	assert.Contains(t, dom, "no-loss: user u2 room r1 seq 1")
	assert.Contains(t, dom, `class="call send evidence"`)

	png := filepath.Join(t.TempDir(), "shot.png")
	browse(t, bin, file, "--window-size=1400,700", "--screenshot="+png)
	shot, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(shot, []byte("\x89PNG")), "a PNG screenshot")
	if *screenshot != "" {
		require.NoError(t, os.WriteFile(*screenshot, shot, 0o644))
	}
}

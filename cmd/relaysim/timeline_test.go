package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// -timeline writes the page, the output says where, and the run is the
// same run: keeping the trace for the page changes no trace hash.
func TestRunWritesTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildRunner(t)
	page := filepath.Join(t.TempDir(), "t.html")
	args := []string{"run", "-seed", "0x3", "-mode", "single", "-nodes", "2", "-users", "3", "-duration", "2s"}
	out, err := exec.Command(bin, append(args, "-timeline", page)...).Output()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "timeline:    "+page)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), "<svg")
	assert.Contains(t, string(html), "No violation")
	assert.Equal(t, lastLine(t, bin, args...), lines(string(out))[len(lines(string(out)))-1])
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// The page's header counts what the printed summary counts, from one
// function (sim.Result.Counts): for a generated run with steals (an acked
// steal is no acked send) and for a story, whose users are the users its
// actions name, not the harness's default twelve. The run is in-process;
// summary and writeTimeline are what run and replay print and write.
func TestTimelineHeaderCountsAsTheSummary(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Mode, cfg.Duration = 0x2a, system.ModeBulk, 10*time.Second
	cfg.Bounds.Steals = 3
	text, err := os.ReadFile("../../scenarios/testdata/shrunk/bug2-duplicate-trusts-retry.txt")
	require.NoError(t, err)
	st, err := scenarios.ReadStory("bug2", string(text))
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		cfg  sim.Config
	}{{"run", cfg}, {"story", st.Config}} {
		name, cfg := c.name, c.cfg
		t.Run(name, func(t *testing.T) {
			cfg.KeepTrace = true
			res := sim.Run(t, cfg)
			require.NoError(t, res.Err)
			var out strings.Builder
			summary(&out, res)
			page := filepath.Join(t.TempDir(), "t.html")
			require.NoError(t, writeTimeline(page, "relaysim run", "", res))
			html, err := os.ReadFile(page)
			require.NoError(t, err)
			sum := regexp.MustCompile(`users=(\d+) [^\n]*\nfaults: [^\n]*\((\d+) injected\)\nmessages: +\d+ sent, (\d+) acked; (\d+) deliveries`).
				FindStringSubmatch(out.String())
			require.NotNil(t, sum, out.String())
			head := regexp.MustCompile(`users=(\d+)</h1>[\s\S]*?(\d+)</b> users · <b[^>]*>(\d+)</b> sends acked · <b[^>]*>(\d+)</b> deliveries[\s\S]*?<b[^>]*>(\d+)</b> faults`).
				FindStringSubmatch(string(html))
			require.NotNil(t, head)
			assert.Equal(t, sum[1], head[1], "users in the title")
			assert.Equal(t, sum[1], head[2], "users")
			assert.Equal(t, sum[3], head[3], "acked sends")
			assert.Equal(t, sum[4], head[4], "deliveries")
			assert.Equal(t, sum[2], head[5], "faults")
			if name == "story" {
				assert.Equal(t, "3", head[2], "the story's own users")
			}
		})
	}
}

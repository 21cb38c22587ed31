package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

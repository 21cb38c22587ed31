package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The exhaustive scheduler over a tiny cluster: every schedule within the
// bound runs, properties hold in each, and the count is itself
// deterministic.
func TestExploreTinyCluster(t *testing.T) {
	cfg := TinyConfig()
	cfg.Mode = "single"
	_, n1, complete := Explore(t, cfg, 1, 1000)
	require.True(t, complete, "bound 1 should be exhausted within 1000 schedules")
	_, n2, _ := Explore(t, cfg, 1, 1000)
	assert.Equal(t, n1, n2)
	assert.Greater(t, n1, 1)
}

package main

import (
	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/sim"
)

// formatStory renders a run as a story in the format replay -story plays
// (scenarios.FormatStory).
func formatStory(cfg sim.Config, comment string) (string, error) {
	return scenarios.FormatStory(cfg, comment), nil
}

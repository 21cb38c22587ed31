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

// formatEquivStory renders a run as a two-mode story: its equiv runs it in
// every mode and compares them (scenarios.FormatEquivStory).
func formatEquivStory(cfg sim.Config, comment string) (string, error) {
	return scenarios.FormatEquivStory(cfg, comment), nil
}

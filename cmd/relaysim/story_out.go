package main

import (
	"errors"

	"github.com/relaysim/relaysim/sim"
)

// formatStory renders a run as a story in the scenarios/testdata format
// (scenarios.FormatStory, issue 20). Until that lands, -o says so.
var formatStory = func(cfg sim.Config, comment string) (string, error) {
	return "", errors.New("writing a run as a story is not built yet (scenarios.FormatStory)")
}

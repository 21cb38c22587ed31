//go:build race

package sim

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true

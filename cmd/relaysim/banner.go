package main

import (
	"github.com/relaysim/relaysim/sim"
)

// Banner is the failure report of DESIGN §6, naming the commit the binary
// was built from.
func Banner(r *sim.Result, cmd string) string {
	return sim.Banner(r, cmd, commitNote(sim.BuildCommit()))
}

// commitNote explains an unknown commit: go run stamps no VCS information
// into the binary it runs.
func commitNote(c string) string {
	if c == "unknown" {
		return "unknown; go run and -buildvcs=false stamp no VCS information into the binary"
	}
	return c
}

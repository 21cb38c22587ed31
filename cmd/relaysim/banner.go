package main

import (
	"strings"

	"github.com/relaysim/relaysim/sim"
)

// Banner is the failure report of DESIGN §6, naming the commit the binary
// was built from: replay is the command that replays the failure, shrink
// (when not empty) the one that shrinks it.
func Banner(r *sim.Result, replay, shrink string) string {
	rep := sim.BannerReport(r, replay, commitNote(sim.BuildCommit()))
	rep.Shrink = shrink
	return rep.String()
}

// shrinkOf is the shrink command of a printed replay command: the same
// build (go run, with the mutant's -overlay if any) and flags, "shrink"
// for "replay" (an equiv command shrinks its calm pair: shrink -equiv),
// without the trace file.
func shrinkOf(replay string) string {
	cmd := strings.TrimSuffix(replay, " -trace trace.txt")
	if strings.Contains(cmd, "relaysim equiv ") {
		return strings.Replace(cmd, "relaysim equiv ", "relaysim shrink -equiv ", 1)
	}
	return strings.Replace(cmd, "relaysim replay ", "relaysim shrink ", 1)
}

// commitNote explains an unknown commit: go tool and go run stamp no VCS information
// into the binary it runs.
func commitNote(c string) string {
	if c == "unknown" {
		return "unknown; go tool, go run and -buildvcs=false stamp no VCS information into the binary"
	}
	return c
}

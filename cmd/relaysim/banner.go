package main

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/relaysim/relaysim/sim"
)

// Banner is the failure report of DESIGN §6.
func Banner(r *sim.Result, cmd string) string {
	return sim.Banner(r, cmd, commit())
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func cmdSweep(args []string, stdout, stderr interface{ Write([]byte) (int, error) }) int {
	fmt.Fprintln(stderr, "relaysim sweep: not implemented yet")
	return exitUsage
}

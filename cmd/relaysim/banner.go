package main

import (
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

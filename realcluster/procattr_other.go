//go:build !linux

package realcluster

import "os/exec"

// dieWithRunner has no portable equivalent of Linux's parent-death signal:
// elsewhere only the runner's own clean-up stops its processes.
func dieWithRunner(*exec.Cmd) {}

//go:build !linux

package system

import "os/exec"

// dieWithTest: only Linux has a parent-death signal; t.Cleanup still kills
// the processes on a normal exit.
func dieWithTest(*exec.Cmd) {}

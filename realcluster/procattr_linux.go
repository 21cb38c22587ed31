package realcluster

import (
	"os/exec"
	"syscall"
)

// dieWithRunner makes cmd get SIGKILL if the runner dies without stopping
// it (a crash, SIGKILL), so no process outlives its run.
func dieWithRunner(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

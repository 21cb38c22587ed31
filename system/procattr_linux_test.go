package system

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes cmd get SIGKILL if the test binary dies (a -timeout
// panic, say), so no redis-server is left behind.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

package scaleout

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel kill a replica if the test binary dies
// without running its cleanups, so no server outlives the run.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

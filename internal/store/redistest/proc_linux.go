package redistest

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel kill the server if the test binary dies
// without running its cleanups (a panic in another goroutine, a timeout's
// SIGQUIT), so no orphaned redis-server outlives the run. (The kernel
// ties this to the thread that started the child; Go only retires a thread
// whose goroutine exits while locked to it, which tests do not do.)
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

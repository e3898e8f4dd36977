package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// stop stops p with SIGSTOP. The kernel delivers it at once (a process
// running on another CPU is interrupted), so the server runs no further
// command once stop has returned.
func stop(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP redis-server: %w", err)
	}
	return nil
}

// cont resumes p after stop.
func cont(p *os.Process) error {
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("SIGCONT redis-server: %w", err)
	}
	return nil
}

// setParentDeath makes the kernel kill the server if the test binary dies
// without running its cleanups (a panic in another goroutine, a timeout's
// SIGQUIT), so no orphaned redis-server outlives the run. (The kernel
// ties this to the thread that started the child; Go only retires a thread
// whose goroutine exits while locked to it, which tests do not do.)
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

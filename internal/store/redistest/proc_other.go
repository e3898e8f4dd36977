//go:build !linux

package redistest

import (
	"errors"
	"os"
	"os/exec"
)

// stop and cont need SIGSTOP and SIGCONT, which this build does not
// send, so Stall fails here.
func stop(*os.Process) error {
	return errors.New("stalling a server needs SIGSTOP, which this build does not send")
}

func cont(*os.Process) error {
	return errors.New("resuming a server needs SIGCONT, which this build does not send")
}

// setParentDeath has no portable equivalent outside Linux; the test's
// cleanup still kills the server on a normal exit.
func setParentDeath(*exec.Cmd) {}

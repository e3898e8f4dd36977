//go:build !linux

package redistest

import "os/exec"

// setParentDeath has no portable equivalent outside Linux; the test's
// cleanup still kills the server on a normal exit.
func setParentDeath(*exec.Cmd) {}

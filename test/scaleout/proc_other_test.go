//go:build !linux

package scaleout

import "os/exec"

// setParentDeath has no portable equivalent outside Linux; the test's
// cleanup still kills the replicas on a normal exit.
func setParentDeath(*exec.Cmd) {}

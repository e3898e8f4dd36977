//go:build !unix

package main

import "time"

// cpuTime is not read on this platform (see cputime_unix_test.go).
func cpuTime() (time.Duration, bool) { return 0, false }

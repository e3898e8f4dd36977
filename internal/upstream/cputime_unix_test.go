//go:build unix

package upstream

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far, every
// goroutine's and the garbage collector's included; ok is false where it
// cannot be read.
func cpuTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

package testutil

import (
	"testing"
	"time"
)

// Wait is how long a test waits for something that happens promptly
// when all is well. It is generous because the machines tests run on are
// shared and often loaded: a test asserts outcomes, never tight timing,
// and a correct run ends its wait as soon as the outcome holds.
const Wait = 10 * time.Second

// Eventually polls cond until it holds, and fails t if within passes
// first. It is for outcomes that have no signal to wait on (a counter
// another goroutine bumps, a key Redis expires); where the code under
// test can signal, wait on the signal instead.
//
// The pause between polls starts at 20µs, so a prompt outcome is seen
// promptly, and doubles up to 2ms, so a slow one costs little CPU.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := 20 * time.Microsecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
}

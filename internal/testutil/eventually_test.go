package testutil

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and
// ends the goroutine, as the real one does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Eventually on a recorder in a goroutine of its own, since a
// failure ends that goroutine, and returns what it recorded and when.
func run(t *testing.T, within time.Duration, cond func() bool) (msg string, took time.Duration) {
	r := &fatalRecorder{TB: t}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(r, within, "the thing", cond)
	}()
	<-done
	return r.msg, time.Since(start)
}

func TestEventually(t *testing.T) {
	cases := []struct {
		name     string
		holdsAt  time.Duration // when cond starts to hold; <0: never
		wantMsg  string
		wantTook time.Duration // at most
	}{
		{"holds at once", 0, "", 0},
		{"holds later", 300 * time.Millisecond, "", 300*time.Millisecond + 2*time.Millisecond},
		{"never holds", -1, "timed out after 1s waiting for the thing", time.Second + 2*time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var polls atomic.Int64
				msg, took := run(t, time.Second, func() bool {
					polls.Add(1)
					return c.holdsAt >= 0 && time.Since(start) >= c.holdsAt
				})
				if msg != c.wantMsg {
					t.Fatalf("Eventually recorded %q, want %q", msg, c.wantMsg)
				}
				if took > c.wantTook {
					t.Fatalf("Eventually took %v, want at most %v", took, c.wantTook)
				}
				// The pause doubles up to 2ms: a second of polling is
				// hundreds of polls, not hundreds of thousands.
				if n := polls.Load(); n > 600 {
					t.Fatalf("cond was polled %d times in %v", n, took)
				}
			})
		})
	}
}

package storetest

import (
	"sync"
	"time"
)

// clock is the time the stores under test read (store.Options.Clock).
// Every reading is one microsecond, the resolution both stores keep,
// after the one before, so of two writes the later one is stamped later
// however fast the machine runs: on the wall clock two writes within a
// microsecond tie, and a tie goes to the id, not to the order of the
// writes. advance moves it on further, so expiry is tested without
// waiting.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

// newClock returns a clock that starts at a fixed instant, so a failing
// run stamps the same times when it is run again.
func newClock() *clock {
	return &clock{now: time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's reading and moves it on by a microsecond.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Microsecond)
	return c.now
}

// advance moves the clock on by d.
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

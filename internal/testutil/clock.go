package testutil

import (
	"sync"
	"time"
)

// Clock is a clock a test controls, for code that takes its time from
// an injected func() time.Time (store.Options.Clock, for one). Each
// reading moves it on by its step first; Advance moves it on by more.
// It is safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewClock returns a clock at start that moves on by step at each
// reading. A step of 0 keeps it still between Advances; a positive step
// makes every reading later than the one before, so the order of two
// stamps is the order of the readings, however fast the machine runs.
func NewClock(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now moves the clock on by its step and returns the reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

package redisconn

import (
	"sync"
	"time"
)

// BreakerOptions tunes when the breaker opens and how long it stays open.
type BreakerOptions struct {
	// Window is how far back failures count, in ten buckets.
	Window time.Duration
	// MinOps is how many operations the window must hold before its
	// failure rate can open the breaker: a quiet replica's one slow
	// reply is not an outage.
	MinOps int
	// FailureRate opens the breaker when at least this share of the
	// window's operations failed.
	FailureRate float64
	// Consecutive failures open it whatever the volume: a Redis that is
	// down fails every operation, also on a quiet replica.
	Consecutive int
	// OpenFor is the first wait before a probe; each failed probe doubles
	// it, up to MaxOpenFor.
	OpenFor, MaxOpenFor time.Duration
}

// DefaultBreaker opens at half of at least 20 operations failing in 10 s,
// or at 5 failures in a row; it probes after 250 ms, then up to every 5 s.
func DefaultBreaker() BreakerOptions {
	return BreakerOptions{Window: 10 * time.Second, MinOps: 20, FailureRate: 0.5, Consecutive: 5,
		OpenFor: 250 * time.Millisecond, MaxOpenFor: 5 * time.Second}
}

const buckets = 10

// bucket counts the operations of one tenth of the window.
type bucket struct {
	start     time.Time
	ops, fail int
}

// Breaker is the health of Redis as this process sees it: closed (use
// Redis) or open (do not wait on it). It is safe for concurrent use.
type Breaker struct {
	o   BreakerOptions
	now func() time.Time

	mu      sync.Mutex
	open    bool
	since   time.Time // when it opened
	wait    time.Duration
	streak  int // consecutive failures
	buckets [buckets]bucket
}

// NewBreaker returns a closed breaker; now is its clock. Unset (zero)
// options take DefaultBreaker's values.
func NewBreaker(o BreakerOptions, now func() time.Time) *Breaker {
	d := DefaultBreaker()
	if o.Window <= 0 {
		o.Window = d.Window
	}
	if o.MinOps <= 0 {
		o.MinOps = d.MinOps
	}
	if o.FailureRate <= 0 || o.FailureRate > 1 {
		o.FailureRate = d.FailureRate
	}
	if o.Consecutive <= 0 {
		o.Consecutive = d.Consecutive
	}
	if o.OpenFor <= 0 {
		o.OpenFor = d.OpenFor
	}
	o.Window = max(o.Window, buckets*time.Millisecond)
	o.MaxOpenFor = max(o.MaxOpenFor, o.OpenFor)
	return &Breaker{o: o, now: now, wait: o.OpenFor}
}

// Allow reports whether an operation may go to Redis now.
func (b *Breaker) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.open
}

// Record counts an operation's outcome; it reports whether this failure
// opened the breaker (the caller then starts probing).
func (b *Breaker) Record(failed bool) (opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open {
		return false // an operation started before it opened
	}
	bk := b.current()
	bk.ops++
	if !failed {
		b.streak = 0
		return false
	}
	bk.fail++
	b.streak++
	ops, fail := b.totals()
	if b.streak >= b.o.Consecutive || ops >= b.o.MinOps && float64(fail) >= b.o.FailureRate*float64(ops) {
		b.open, b.since, b.wait = true, b.now(), b.o.OpenFor
		return true
	}
	return false
}

// NextProbe is how long to wait before the next probe while open.
func (b *Breaker) NextProbe() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wait
}

// Probed records a probe's outcome while open: success closes the
// breaker with an empty window; failure doubles the wait.
func (b *Breaker) Probed(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok {
		b.wait = min(2*b.wait, b.o.MaxOpenFor)
		return
	}
	b.open, b.streak, b.buckets = false, 0, [buckets]bucket{}
}

// OpenSince is when the breaker opened, and whether it is open.
func (b *Breaker) OpenSince() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.since, b.open
}

// current is the bucket of now, emptied if it held an older tenth.
func (b *Breaker) current() *bucket {
	width := b.o.Window / buckets
	now := b.now()
	start := now.Truncate(width)
	bk := &b.buckets[int(start.UnixNano()/int64(width))%buckets]
	if !bk.start.Equal(start) {
		*bk = bucket{start: start}
	}
	return bk
}

// totals sums the buckets still inside the window.
func (b *Breaker) totals() (ops, fail int) {
	oldest := b.now().Add(-b.o.Window)
	for _, bk := range b.buckets {
		if bk.start.After(oldest) {
			ops += bk.ops
			fail += bk.fail
		}
	}
	return ops, fail
}

package cache

import (
	"fmt"
	"time"
)

// Priority is an entry's eviction tier (CacheSetOptions.priority). All Low
// entries are evicted before any Normal one, and all Normal before any
// High; within a tier the policy decides.
type Priority uint8

// The priorities. The zero value means Normal.
const (
	Low Priority = iota + 1
	Normal
	High
)

const numPriorities = int(High)

// String returns the PRD name: "low", "normal" or "high".
func (p Priority) String() string {
	switch p {
	case Low:
		return "low"
	case Normal, 0:
		return "normal"
	case High:
		return "high"
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// ParsePriority parses a PRD priority name; "" is Normal.
func ParsePriority(s string) (Priority, error) {
	switch s {
	case "low":
		return Low, nil
	case "normal", "":
		return Normal, nil
	case "high":
		return High, nil
	}
	return 0, fmt.Errorf("cache: priority %q: want \"low\", \"normal\" or \"high\"", s)
}

// A SetOption sets a per-entry option of Set. It is a small value, so
// passing options does not allocate.
type SetOption struct {
	ttl      time.Duration
	hasTTL   bool
	priority Priority
}

// WithTTL sets the entry's time to live instead of Config.DefaultTTL; 0
// means the entry never expires (CacheSetOptions.ttlMs). A negative TTL
// makes Set fail with ErrInvalidEntry.
func WithTTL(d time.Duration) SetOption { return SetOption{ttl: d, hasTTL: true} }

// WithPriority sets the entry's eviction tier; without it an entry is
// Normal.
func WithPriority(p Priority) SetOption { return SetOption{priority: p} }

// EvictReason says why an entry left the cache without a Delete or Set.
type EvictReason uint8

const (
	// EvictCapacity: removed to make room (maxSizeBytes, maxEntries or the
	// water marks).
	EvictCapacity EvictReason = iota + 1
	// EvictExpired: its TTL passed (found by Get, Delete, eviction or the
	// cleanup sweep).
	EvictExpired
)

func (r EvictReason) String() string {
	switch r {
	case EvictCapacity:
		return "capacity"
	case EvictExpired:
		return "expired"
	}
	return fmt.Sprintf("EvictReason(%d)", uint8(r))
}

// An Option configures New.
type Option[K comparable, V any] func(*options[K, V])

type options[K comparable, V any] struct {
	clock   func() time.Time
	sizer   func(K, V) int64
	onEvict func(K, V, EvictReason)
}

// WithClock makes the cache read time from now instead of time.Now, so
// tests control expiry without sleeping. now is called with the cache's
// lock held: it must be fast and must not call the cache.
func WithClock[K comparable, V any](now func() time.Time) Option[K, V] {
	return func(o *options[K, V]) { o.clock = now }
}

// WithSizer replaces DefaultSizer. size returns the bytes an entry is
// charged, all of it: the cache adds nothing. It is called by Set before
// the lock is taken; a negative result makes Set fail with
// ErrInvalidEntry.
func WithSizer[K comparable, V any](size func(K, V) int64) Option[K, V] {
	return func(o *options[K, V]) { o.sizer = size }
}

// WithOnEvict calls fn for every entry that is evicted or expires (not for
// Delete, for a Set that replaces a key, or on Close). fn is called after
// the operation that removed the entry has released the lock, on that
// operation's goroutine (the cleanup goroutine for the sweep), so it may
// call the cache, except Close from the cleanup goroutine. Calls from
// concurrent operations may interleave.
func WithOnEvict[K comparable, V any](fn func(key K, value V, reason EvictReason)) Option[K, V] {
	return func(o *options[K, V]) { o.onEvict = fn }
}

// Package ratelimit is the per-principal token bucket
// (docs/adr/0022-rate-limits.md): in-process by default, in Redis when the
// replicas share one, so a limit holds across replicas rather than per pod.
//
// Both implementations are GCRA (the generic cell rate algorithm), a
// token bucket that keeps one number per key — the theoretical arrival
// time of the next request — so a Redis-backed bucket is one key and one
// script call per request. A Redis that cannot answer does not fail the
// request: the in-process bucket decides meanwhile (INV-MCP-XC-002), so a
// caller is still limited, per replica, during the outage.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// Rate is a bucket's refill rate and size.
type Rate struct {
	// PerSecond is the sustained rate; 0 turns the limit off.
	PerSecond float64 `yaml:"perSecond"`
	// Burst is how many requests may come at once after a quiet spell.
	Burst int `yaml:"burst"`
}

// Off reports whether the rate limits nothing.
func (r Rate) Off() bool { return r.PerSecond <= 0 }

// Validate names the bad field below prefix.
func (r Rate) Validate(prefix string) error {
	switch {
	case r.PerSecond < 0 || r.PerSecond > 1e6 || math.IsNaN(r.PerSecond):
		return fmt.Errorf("%s.perSecond: %v: use 0 (no limit) to 1000000", prefix, r.PerSecond)
	case r.Off():
		return nil
	case r.Burst < 1 || r.Burst > 1e6:
		return fmt.Errorf("%s.burst: %d: use 1 to 1000000", prefix, r.Burst)
	}
	return nil
}

// interval is the time one request uses up; tolerance how far ahead of
// now the next arrival time may run (the burst).
func (r Rate) interval() time.Duration { return time.Duration(float64(time.Second) / r.PerSecond) }
func (r Rate) tolerance() time.Duration {
	return time.Duration(r.Burst-1) * r.interval()
}

// Decision is the outcome of one request against a bucket.
type Decision struct {
	Allowed bool
	// RetryAfter is how long until the request would be allowed (zero
	// when allowed).
	RetryAfter time.Duration
}

// gcra applies one request at now to the arrival time tat (zero for a
// new key) and returns the decision and the new arrival time.
func gcra(r Rate, tat, now time.Time) (Decision, time.Time) {
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(r.interval())
	if allowAt := next.Add(-r.interval() - r.tolerance()); allowAt.After(now) {
		return Decision{RetryAfter: allowAt.Sub(now)}, tat
	}
	return Decision{Allowed: true}, next
}

// Local is the in-process bucket store. Keys idle long enough to be full
// again are dropped by Sweep, so the map is bounded by the callers active
// within one refill period.
type Local struct {
	mu   sync.Mutex
	tats map[string]time.Time
	now  func() time.Time
}

// NewLocal returns an empty store; now is the clock (nil: time.Now).
func NewLocal(now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	return &Local{tats: map[string]time.Time{}, now: now}
}

// Allow spends one request of key's bucket at rate r.
func (l *Local) Allow(key string, r Rate) Decision {
	if r.Off() {
		return Decision{Allowed: true}
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	d, tat := gcra(r, l.tats[key], now)
	l.tats[key] = tat
	return d
}

// Sweep drops every key whose bucket is full again: forgetting it changes
// no decision.
func (l *Local) Sweep() {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, tat := range l.tats {
		if !tat.After(now) {
			delete(l.tats, k)
		}
	}
}

// Len is the number of keys held.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tats)
}

// Limiter decides per key: in Redis when the replicas share one, in
// process otherwise.
type Limiter struct {
	local  *Local
	shared *Redis // nil without Redis
}

// New returns a Limiter; conn nil means in-process only.
func New(conn *redisconn.Conn, log zerolog.Logger) *Limiter {
	l := &Limiter{local: NewLocal(nil)}
	if conn != nil {
		l.shared = NewRedis(conn, l.local, log)
	}
	return l
}

// Allow spends one request of key's bucket at rate r.
func (l *Limiter) Allow(ctx context.Context, key string, r Rate) Decision {
	if l.shared != nil {
		return l.shared.Allow(ctx, key, r)
	}
	return l.local.Allow(key, r)
}

// Run sweeps the in-process buckets every interval until ctx ends.
func (l *Limiter) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.local.Sweep()
		}
	}
}

// Bucket is a single in-process bucket.
type Bucket struct {
	rate Rate
	now  func() time.Time
	mu   sync.Mutex
	tat  time.Time
}

// NewBucket returns a full bucket at rate r; now is the clock (nil:
// time.Now).
func NewBucket(r Rate, now func() time.Time) *Bucket {
	if now == nil {
		now = time.Now
	}
	return &Bucket{rate: r, now: now}
}

// Take spends one request and returns zero, or, when the bucket is
// empty, how long until it allows one (and spends nothing). The clock is
// read under the lock, so concurrent arrivals are applied in order and
// no more than Burst + PerSecond × elapsed are ever allowed.
func (b *Bucket) Take() time.Duration {
	if b.rate.Off() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, tat := gcra(b.rate, b.tat, b.now())
	b.tat = tat
	return d.RetryAfter
}

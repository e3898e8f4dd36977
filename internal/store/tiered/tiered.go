package tiered

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Defaults of Options.
const (
	DefaultRedisTTL = 5 * time.Minute
	// DefaultRedisMaxValueBytes is the default RedisMaxValueBytes.
	DefaultRedisMaxValueBytes = 1 << 20
	DefaultChannel            = "mcp-runtime:invalidate"
	DefaultKeyPrefix          = "mcp-runtime:c:"
)

// Options configure New.
type Options struct {
	// L1 configures tier 1 (the YAML cache: section); the zero value means
	// cache.DefaultConfig().
	L1 cache.Config
	// Redis is tier 2 and the invalidation bus: the process's connection,
	// whose bounds (its hot one on a caller's path, its background one
	// off it) and whose health the tier shares with Redis's other users;
	// nil means a single process with tier 1 only. The Store does not
	// close it.
	Redis *redisconn.Conn
	// RedisTTL is the longest a value lives in Redis (default
	// DefaultRedisTTL).
	RedisTTL time.Duration
	// RedisMaxValueBytes bounds what one key holds in Redis: a value whose
	// tier-2 form is longer is never written there (a write leaves a
	// tombstone instead), and is read from tier 1 or the store (default
	// DefaultRedisMaxValueBytes).
	RedisMaxValueBytes int
	// Channel carries invalidations between replicas (default
	// DefaultChannel). Replicas sharing a database must share it.
	Channel string
	// KeyPrefix starts every Redis key (default DefaultKeyPrefix); it lets
	// deployments, or tests, share one Redis.
	KeyPrefix string
	Log       zerolog.Logger
	// Clock is the clock the wrapped store stamps expiry with
	// (store.Options.Clock); a cached entry is judged expired against it,
	// so the two must be the same. Nil means the wall clock.
	Clock func() time.Time

	tune tuning // tests shorten timings; zero fields take the defaults
}

// Store is a store.Store with a two-tier read cache; see the package
// documentation. Create it with New and release it with Close.
type Store struct {
	next store.Store
	l1   *tier1
	t2   *tier2 // nil without Redis
	log  zerolog.Logger

	received atomic.Uint64 // invalidation messages applied

	bg        context.Context // background work; cancelled by Close
	cancel    context.CancelFunc
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	psMu    sync.Mutex
	ps      *redis.PubSub // the current subscription, for Close to cut
	closing bool

	subscribed bool // a subscription has been confirmed; subscriber goroutine only
	unwatch    func()

	// afterFetch, when set by a test, runs after a lookup has read the
	// wrapped store and before it populates the tiers.
	afterFetch func(k ckey)
}

var _ store.Store = (*Store)(nil)

// New wraps next. With Redis it starts two goroutines, the invalidation
// subscriber and the Redis prober, which Close stops. It does not wait
// for Redis: until the subscription is confirmed, tier 1 is bypassed and
// calls go to Redis or the wrapped store. ctx is used for nothing beyond
// New (its values are kept for background work, its cancellation is not).
func New(ctx context.Context, next store.Store, opts Options) (*Store, error) {
	if next == nil {
		return nil, errors.New("tiered: new: no store to wrap")
	}
	if opts.L1 == (cache.Config{}) {
		opts.L1 = cache.DefaultConfig()
	}
	if opts.Redis != nil && !contextTimeouts(opts.Redis.Client()) {
		return nil, errors.New("tiered: new: the Redis client must be created with ContextTimeoutEnabled: true, or the connection's bounds cannot bound its calls")
	}
	opts.RedisTTL = cmp.Or(opts.RedisTTL, DefaultRedisTTL)
	opts.RedisMaxValueBytes = cmp.Or(opts.RedisMaxValueBytes, DefaultRedisMaxValueBytes)
	opts.Channel = cmp.Or(opts.Channel, DefaultChannel)
	opts.KeyPrefix = cmp.Or(opts.KeyPrefix, DefaultKeyPrefix)
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.RedisTTL < 0 || opts.RedisMaxValueBytes < 0 {
		return nil, fmt.Errorf("tiered: new: negative RedisTTL (%v) or RedisMaxValueBytes (%d)",
			opts.RedisTTL, opts.RedisMaxValueBytes)
	}

	l1, err := newTier1(opts.L1, opts.Clock)
	if err != nil {
		return nil, fmt.Errorf("tiered: new: tier 1: %w", err)
	}
	s := &Store{next: next, l1: l1, log: opts.Log, stop: make(chan struct{})}
	s.bg, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if opts.Redis == nil {
		l1.live.Store(true) // every write passes through this process
		return s, nil
	}
	s.t2 = newTier2(opts, opts.Log)
	// When the connection's probe finds Redis back, replay at once rather
	// than at the end of a backoff.
	s.unwatch = opts.Redis.Watch(func(available bool) {
		if available {
			s.t2.nudge()
		}
	})
	s.wg.Add(2)
	go s.subscribe()
	go func() {
		defer s.wg.Done()
		s.t2.probe(s.stop)
	}()
	return s, nil
}

// contextTimeouts reports whether the client lets a context deadline
// bound its socket reads; clients it cannot inspect get the benefit of
// the doubt.
func contextTimeouts(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}

// Close stops the subscriber and the prober, waits for them, closes tier
// 1 and then the wrapped store. It does not close the Redis client.
// Close is idempotent.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.cancel()
		if s.unwatch != nil {
			s.unwatch()
		}
		s.psMu.Lock()
		s.closing = true
		if s.ps != nil {
			_ = s.ps.Close() // unblocks a Receive in progress
		}
		s.psMu.Unlock()
		s.wg.Wait()
		s.l1.c.Close()
		s.next.Close()
	})
}

// Stats are the cache's counters, for metrics and health reports.
type Stats struct {
	L1 cache.Stats
	// RedisHits and RedisMisses count tier-2 reads; RedisErrors counts
	// Redis operations that failed or timed out and calls that skipped
	// Redis because it was degraded: each is a fallback to the store.
	RedisHits, RedisMisses, RedisErrors uint64
	RedisDegraded                       bool
	// RedisOversized counts values kept out of Redis because their tier-2
	// form was longer than RedisMaxValueBytes.
	RedisOversized uint64
	// PendingInvalidations are waiting for Redis to come back; -1 means
	// too many were missed and every key will be dropped instead.
	PendingInvalidations int
	// L1Live reports that tier 1 is in use (always without Redis).
	L1Live                 bool
	InvalidationsPublished uint64
	InvalidationsReceived  uint64
	// L1Flushes counts the times all of tier 1 was dropped: lost or renewed
	// subscriptions and flush messages.
	L1Flushes uint64
}

// Stats returns the counters; each is read atomically, the set is not one
// snapshot.
func (s *Store) Stats() Stats {
	st := Stats{
		L1:                    s.l1.stats(),
		L1Live:                s.l1.live.Load(),
		InvalidationsReceived: s.received.Load(),
		L1Flushes:             s.l1.flushes.Load(),
	}
	if t := s.t2; t != nil {
		st.RedisHits, st.RedisMisses, st.RedisErrors = t.hits.Load(), t.misses.Load(), t.errs.Load()
		st.RedisDegraded = t.degraded.Load() || !t.conn.Available()
		st.RedisOversized = t.oversized.Load()
		st.InvalidationsPublished = t.published.Load()
		t.mu.Lock()
		st.PendingInvalidations = len(t.pending) + t.replaying
		if t.flushAll || t.replayingAll {
			st.PendingInvalidations = -1
		}
		t.mu.Unlock()
	}
	return st
}

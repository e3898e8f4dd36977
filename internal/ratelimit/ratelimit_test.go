package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"pgregory.net/rapid"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// A fresh bucket lets Burst requests through at once, then one every
// 1/PerSecond, and says exactly how long to wait.
func TestLocalBucket(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := NewLocal(c.now)
	r := Rate{PerSecond: 10, Burst: 3}
	for i := range 3 {
		if d := l.Allow("p", r); !d.Allowed {
			t.Fatalf("request %d of the burst refused: %+v", i, d)
		}
	}
	d := l.Allow("p", r)
	if d.Allowed || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("fourth request: %+v, want refused with RetryAfter 100ms", d)
	}
	if d := l.Allow("q", r); !d.Allowed {
		t.Fatal("another principal's bucket is shared")
	}
	c.t = c.t.Add(100 * time.Millisecond)
	if d := l.Allow("p", r); !d.Allowed {
		t.Fatalf("after RetryAfter: %+v", d)
	}
	if d := l.Allow("p", Rate{}); !d.Allowed {
		t.Fatal("a rate of 0 limits")
	}
	c.t = c.t.Add(time.Hour)
	l.Sweep()
	if l.Len() != 0 {
		t.Errorf("%d buckets kept after they refilled", l.Len())
	}
}

// Property: over any sequence of arrivals, the requests allowed never
// exceed Burst + PerSecond × elapsed, and a refused request allowed at
// now+RetryAfter would be allowed then.
func TestLocalBucketProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := Rate{PerSecond: rapid.Float64Range(0.5, 1000).Draw(t, "rate"), Burst: rapid.IntRange(1, 50).Draw(t, "burst")}
		c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
		start := c.t
		l := NewLocal(c.now)
		allowed := 0
		for i := range rapid.IntRange(1, 300).Draw(t, "n") {
			c.t = c.t.Add(time.Duration(rapid.Int64Range(0, int64(50*time.Millisecond)).Draw(t, fmt.Sprint("gap", i))))
			d := l.Allow("k", r)
			if d.Allowed {
				allowed++
			} else if d.RetryAfter <= 0 {
				t.Fatalf("refused with RetryAfter %v", d.RetryAfter)
			}
			limit := float64(r.Burst) + r.PerSecond*c.t.Sub(start).Seconds() + 1e-6
			if float64(allowed) > limit {
				t.Fatalf("%d allowed by %v, limit %.2f", allowed, c.t.Sub(start), limit)
			}
		}
	})
}

// newRedisLimiter is one replica's limiter: its own client and local
// fallback, the deployment's prefix.
func newRedisLimiter(t *testing.T, addr, prefix string) *Limiter {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	conn := redisconn.New(rdb, redisconn.Options{KeyPrefix: prefix, Timeouts: redisconn.Timeouts{Hot: 200 * time.Millisecond}})
	t.Cleanup(func() { _ = conn.Close() })
	return New(conn, zerolog.Nop())
}

// Two replicas sharing Redis share one bucket per principal: the limit
// holds across them. With Redis stopped each replica still limits on its
// own, and sharing resumes when Redis returns.
func TestRedisBucketAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	prefix := fmt.Sprintf("rl-test-%d:", time.Now().UnixNano())
	a, b := newRedisLimiter(t, srv.Addr(), prefix), newRedisLimiter(t, srv.Addr(), prefix)
	ctx := context.Background()
	r := Rate{PerSecond: 1, Burst: 4}
	got := 0
	for i := range 10 {
		rep := a
		if i%2 == 1 {
			rep = b
		}
		if rep.Allow(ctx, "tenant/apikey:ci", r).Allowed {
			got++
		}
	}
	if got != 4 {
		t.Fatalf("%d of 10 requests allowed across two replicas, want the burst of 4", got)
	}
	d := a.Allow(ctx, "tenant/apikey:ci", r)
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("over the limit: %+v, want refused with 0 < RetryAfter <= 1s", d)
	}

	srv.Stop()
	local := 0
	slow := Rate{PerSecond: 0.01, Burst: 4} // the failed dials take time: no refill meanwhile
	for range 10 {
		if a.Allow(ctx, "tenant/apikey:ops", slow).Allowed {
			local++
		}
	}
	if local != 4 || a.shared.Fallbacks() == 0 {
		t.Fatalf("during the outage: %d allowed (want 4, limited locally), %d fallbacks", local, a.shared.Fallbacks())
	}
	srv.Restart() // returns once the new server answers PING
	// The client's pooled connections died with the old server; each is
	// found dead by a call that fails and falls back, so sharing resumes
	// after a few calls, not at once. Only calls that reach Redis take
	// from the (new, empty) shared bucket.
	testutil.Eventually(t, testutil.Wait, "a replica to decide in Redis again", func() bool {
		return a.Allow(ctx, "tenant/apikey:new", r).Allowed && !a.shared.down.Load()
	})
}

// The skip window is the connection's, shared by every user of Redis in
// the process: once another user's failures open the breaker, the limiter
// decides locally without waiting on Redis, though Redis itself answers.
func TestRedisSharesTheConnectionsBreaker(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	// No probe within the test: the breaker stays open until it ends,
	// though Redis answers.
	conn := redisconn.New(rdb, redisconn.Options{KeyPrefix: fmt.Sprintf("rl-breaker-%d:", time.Now().UnixNano()),
		Breaker: redisconn.BreakerOptions{OpenFor: time.Hour}})
	t.Cleanup(func() { _ = conn.Close() })
	l := New(conn, zerolog.Nop())
	r := Rate{PerSecond: 1, Burst: 2}
	if !l.Allow(context.Background(), "k", r).Allowed || l.shared.Fallbacks() != 0 {
		t.Fatalf("with Redis answering: %d fallbacks, want a shared decision", l.shared.Fallbacks())
	}
	for conn.Available() { // another user of the connection times out, again and again
		conn.Observe(context.DeadlineExceeded)
	}
	if d := l.Allow(context.Background(), "k", r); !d.Allowed || l.shared.Fallbacks() != 1 {
		t.Fatalf("with the breaker open: %+v, %d fallbacks; want a local decision", d, l.shared.Fallbacks())
	}
}

// On Redis Cluster two replicas still share one bucket per principal,
// whichever master holds it.
func TestRedisBucketOnCluster(t *testing.T) {
	url := redistest.ClusterURL(t)
	prefix := fmt.Sprintf("rl-cluster-%d:", time.Now().UnixNano())
	replica := func() *Limiter {
		conn, err := redisconn.Open(redisconn.Options{Mode: redisconn.Cluster, URL: url, KeyPrefix: prefix, Timeouts: redisconn.Timeouts{Hot: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return New(conn, zerolog.Nop())
	}
	a, b := replica(), replica()
	r := Rate{PerSecond: 0.01, Burst: 3}
	for _, key := range []string{"tenant/apikey:a", "tenant/apikey:b", "tenant/apikey:c", "tenant/apikey:d"} {
		got := 0
		for i := range 8 {
			rep := a
			if i%2 == 1 {
				rep = b
			}
			if rep.Allow(context.Background(), key, r).Allowed {
				got++
			}
		}
		if got != 3 || a.shared.Fallbacks()+b.shared.Fallbacks() != 0 {
			t.Fatalf("%s: %d of 8 allowed across two replicas (want the burst of 3), %d fallbacks", key, got, a.shared.Fallbacks()+b.shared.Fallbacks())
		}
	}
}

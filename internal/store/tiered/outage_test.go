package tiered

import (
	"context"
	"fmt"
	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// fast shortens the backoffs and the subscriber's poll, so that outage
// tests recover in a fraction of a second.
func fast(o *Options) {
	o.tune = tuning{minBackoff: 50 * time.Millisecond, maxBackoff: 200 * time.Millisecond, pubsubPoll: 100 * time.Millisecond}
}

// timed runs f and fails the test if it took 2 s or more: a call must
// never wait on a Redis that is gone for longer than RedisTimeout plus
// the store's own time (the bound is loose on purpose, for -race and busy
// machines).
func timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d >= 2*time.Second {
		t.Fatalf("%s took %v", what, d)
	}
}

// TestRedisOutage kills Redis under two replicas and brings it back: every
// call succeeds and returns fresh data throughout, nothing written during
// the outage is served stale afterwards, and tier 2 is used again without
// recreating the Stores.
func TestRedisOutage(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	var log logBuffer
	a := newReplica(t, backend, r.Addr(), fast, logTo(&log))
	b := newReplica(t, backend, r.Addr(), fast)
	live(t, a)
	live(t, b)

	for i := range 5 {
		put(t, a, "acme", "ns", fmt.Sprint("k", i), `"before"`, 0)
	}
	// Once B has heard of the writes, nothing will drop what it caches.
	testutil.Eventually(t, testutil.Wait, "B to receive the invalidations", func() bool { return b.Stats().InvalidationsReceived == 5 })
	for i := range 5 {
		get(t, b, "acme", "ns", fmt.Sprint("k", i))
		get(t, b, "acme", "ns", fmt.Sprint("k", i))
	}
	if st := b.Stats(); st.L1.HitCount == 0 || st.RedisHits == 0 {
		t.Fatalf("before the outage: %+v", st)
	}

	r.Stop()
	// A crash closes the sockets: both subscribers notice at once, and
	// from then on tier 1 is bypassed (it cannot hear invalidations).
	testutil.Eventually(t, testutil.Wait, "both replicas to bypass tier 1", func() bool {
		return !a.Stats().L1Live && !b.Stats().L1Live
	})
	errsBefore := a.Stats().RedisErrors + b.Stats().RedisErrors
	for i := range 5 {
		k := fmt.Sprint("k", i)
		timed(t, "a write during the outage", func() { put(t, a, "acme", "ns", k, `"during"`, 0) })
		for _, s := range []*Store{a, b} {
			timed(t, "a read during the outage", func() {
				e, cached := get(t, s, "acme", "ns", k)
				wantValue(t, e, `"during"`)
				if cached {
					t.Fatal("a read during the outage came from a cache")
				}
			})
		}
	}
	st := a.Stats()
	if !st.RedisDegraded || st.RedisErrors+b.Stats().RedisErrors <= errsBefore {
		t.Fatalf("during the outage: degraded %v, errors %d (were %d)", st.RedisDegraded, st.RedisErrors, errsBefore)
	}
	if st.L1Flushes == 0 {
		t.Fatal("tier 1 was not flushed when the subscription was lost")
	}
	// Logged once per transition, not once per failed call.
	if n := log.count("redis unavailable"); n != 1 {
		t.Fatalf("the outage was logged %d times, want once", n)
	}

	r.Restart()
	testutil.Eventually(t, testutil.Wait, "both replicas to use Redis again", func() bool {
		sa, sb := a.Stats(), b.Stats()
		return !sa.RedisDegraded && !sb.RedisDegraded && sa.L1Live && sb.L1Live
	})
	for i := range 5 {
		k := fmt.Sprint("k", i)
		for range 2 {
			for _, s := range []*Store{a, b} {
				e, _ := get(t, s, "acme", "ns", k)
				wantValue(t, e, `"during"`)
			}
		}
	}
	// The keys written during the outage are tombstoned by A's replay for
	// a while; a fresh key shows tier 2 in use again.
	put(t, backend, "acme", "ns", "fresh", `"after"`, 0)
	hits := b.Stats().RedisHits
	get(t, a, "acme", "ns", "fresh")
	if e, cached := get(t, b, "acme", "ns", "fresh"); !cached || string(e.Value) != `"after"` {
		t.Fatalf("B after the restart: %s, cached %v", e.Value, cached)
	}
	if got := b.Stats().RedisHits; got <= hits {
		t.Fatalf("after the restart B's RedisHits stayed at %d: tier 2 unused", got)
	}
	if n := log.count("redis is back"); n != 1 {
		t.Fatalf("the recovery was logged %d times, want once", n)
	}
}

// TestPartitionReplaysInvalidations cuts one replica off a Redis that
// keeps its data. The writes it makes meanwhile cannot reach Redis; once
// the partition heals they are replayed, so the value Redis still holds
// from before is not served to anyone afterwards.
func TestPartitionReplaysInvalidations(t *testing.T) {
	r := redistest.Start(t)
	p := netfault.NewProxy(t, r.Addr())
	backend := newBackend()
	a := newReplica(t, backend, p.Addr(), fast) // behind the proxy
	b := newReplica(t, backend, r.Addr(), fast)
	live(t, a)
	live(t, b)

	put(t, a, "acme", "ns", "k", `"v1"`, 0)
	get(t, b, "acme", "ns", "k")
	if v, _ := rawRedis(t, b, memKey("acme", "ns", "k")); v == "" || v == tombstone {
		t.Fatalf("tier 2 before the partition: %q", v)
	}

	p.Cut()
	timed(t, "a write cut off from Redis", func() { put(t, a, "acme", "ns", "k", `"v2"`, 0) })
	if st := a.Stats(); !st.RedisDegraded || st.PendingInvalidations != 1 {
		t.Fatalf("A while cut off: degraded %v, pending %d", st.RedisDegraded, st.PendingInvalidations)
	}
	if e, _ := get(t, a, "acme", "ns", "k"); string(e.Value) != `"v2"` {
		t.Fatalf("the writer read %s during the partition", e.Value)
	}
	// Redis still holds v1: B is stale until the partition heals (the
	// documented bound).
	if v, _ := rawRedis(t, b, memKey("acme", "ns", "k")); v == tombstone {
		t.Fatal("tier 2 changed although the writer could not reach it")
	}

	p.Restore()
	testutil.Eventually(t, testutil.Wait, "A to replay and recover", func() bool {
		st := a.Stats()
		return !st.RedisDegraded && st.PendingInvalidations == 0
	})
	if v, _ := rawRedis(t, b, memKey("acme", "ns", "k")); v != tombstone {
		t.Fatalf("after the replay tier 2 holds %q, want a tombstone", v)
	}
	testutil.Eventually(t, testutil.Wait, "B to read v2", func() bool {
		e, _ := get(t, b, "acme", "ns", "k")
		return string(e.Value) == `"v2"`
	})
	live(t, a)
	e, _ := get(t, a, "acme", "ns", "k")
	wantValue(t, e, `"v2"`)
}

// TestPendingOverflowFlushesEverything: past maxPending missed
// invalidations the replica forgets the keys and drops every key of its
// prefix once Redis is back, and tells every replica to drop tier 1.
func TestPendingOverflowFlushesEverything(t *testing.T) {
	r := redistest.Start(t)
	p := netfault.NewProxy(t, r.Addr())
	backend := newBackend()
	small := func(o *Options) {
		fast(o)
		o.tune.maxPending = 3
		o.tune.tombstoneTTL = 200 * time.Millisecond // the two flush passes are 100ms apart
	}
	a := newReplica(t, backend, p.Addr(), small)
	b := newReplica(t, backend, r.Addr(), small)
	live(t, a)
	live(t, b)
	for i := range 5 {
		put(t, backend, "acme", "ns", fmt.Sprint("k", i), `"v1"`, 0)
		get(t, b, "acme", "ns", fmt.Sprint("k", i)) // in tier 2 and B's tier 1
	}
	p.Cut()
	for i := range 5 {
		put(t, a, "acme", "ns", fmt.Sprint("k", i), `"v2"`, 0)
	}
	if st := a.Stats(); st.PendingInvalidations != -1 {
		t.Fatalf("pending = %d, want -1 (flush all)", st.PendingInvalidations)
	}
	flushes := b.Stats().L1Flushes
	p.Restore()
	testutil.Eventually(t, testutil.Wait, "A to flush and recover", func() bool { return !a.Stats().RedisDegraded })
	if n := r2keys(t, a); n != 0 {
		t.Fatalf("%d keys of ours left in Redis after the flush", n)
	}
	testutil.Eventually(t, testutil.Wait, "B to flush tier 1", func() bool { return b.Stats().L1Flushes >= flushes+2 })
	for i := range 5 {
		e, _ := get(t, b, "acme", "ns", fmt.Sprint("k", i))
		wantValue(t, e, `"v2"`)
	}
}

// r2keys counts the keys under s's prefix.
func r2keys(t *testing.T, s *Store) int {
	t.Helper()
	keys, err := s.t2.rdb.Keys(context.Background(), globEscape(s.t2.prefix)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestSlowRedis: a Redis that accepts connections and never answers costs
// each call at most about RedisTimeout, and only until the first failure
// turns Redis degraded; every call succeeds from the store.
func TestSlowRedis(t *testing.T) {
	t.Run("black hole", func(t *testing.T) {
		backend := newBackend()
		s := newReplica(t, backend, netfault.Blackhole(t), fast, shortTimeout)
		for i := range 20 {
			k := fmt.Sprint("k", i)
			timed(t, "a write to a silent Redis", func() { put(t, s, "acme", "ns", k, `1`, 0) })
			timed(t, "a read from a silent Redis", func() {
				e, _ := get(t, s, "acme", "ns", k)
				wantValue(t, e, `1`)
			})
		}
		if st := s.Stats(); st.RedisErrors == 0 || !st.RedisDegraded || st.L1Live {
			t.Fatalf("stats: %+v", st)
		}
	})

	t.Run("stalled mid-life", func(t *testing.T) {
		r := redistest.Start(t)
		backend := newBackend()
		s := newReplica(t, backend, r.Addr(), fast, shortTimeout)
		live(t, s)
		put(t, s, "acme", "ns", "k", `1`, 0)

		// Stall stops the whole server, as a long-running command or a
		// fork under memory pressure would; it is in force once Stall
		// returns.
		resume := r.Stall()

		errs := s.Stats().RedisErrors
		for i := range 10 {
			timed(t, "a call to a stalled Redis", func() {
				put(t, s, "acme", "ns", fmt.Sprint("s", i), `2`, 0)
				e, _ := get(t, s, "acme", "ns", fmt.Sprint("s", i))
				wantValue(t, e, `2`)
			})
		}
		if s.Stats().RedisErrors <= errs {
			t.Fatal("RedisErrors did not grow while Redis was stalled")
		}
		resume()
		testutil.Eventually(t, testutil.Wait, "recovery", func() bool { st := s.Stats(); return !st.RedisDegraded && st.L1Live })
		for i := range 10 {
			e, _ := get(t, s, "acme", "ns", fmt.Sprint("s", i))
			wantValue(t, e, `2`)
		}
	})
}

// TestSilentLink freezes the network between a replica and Redis without
// closing anything: no error ever reaches the subscriber, which must find
// the dead link by PINGing it, stop trusting tier 1, and recover once the
// link thaws.
func TestSilentLink(t *testing.T) {
	r := redistest.Start(t)
	p := netfault.NewProxy(t, r.Addr())
	backend := newBackend()
	a := newReplica(t, backend, p.Addr(), fast, shortTimeout)
	b := newReplica(t, backend, r.Addr(), fast)
	live(t, a)
	live(t, b)
	put(t, b, "acme", "ns", "k", `"v1"`, 0)
	get(t, a, "acme", "ns", "k")

	p.Freeze()
	testutil.Eventually(t, testutil.Wait, "A to notice the silent link", func() bool { return !a.Stats().L1Live })
	// B's write cannot reach A's subscriber, but A no longer trusts tier 1.
	put(t, b, "acme", "ns", "k", `"v2"`, 0)
	timed(t, "a read over a silent link", func() {
		e, _ := get(t, a, "acme", "ns", "k")
		wantValue(t, e, `"v2"`)
	})

	p.Thaw()
	testutil.Eventually(t, testutil.Wait, "A to resubscribe", func() bool { st := a.Stats(); return st.L1Live && !st.RedisDegraded })
	e, _ := get(t, a, "acme", "ns", "k")
	wantValue(t, e, `"v2"`)
}

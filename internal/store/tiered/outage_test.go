package tiered

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
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
		s := newReplica(t, backend, netfault.Blackhole(t), fast, shortTimeout(t))
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
		s := newReplica(t, backend, r.Addr(), fast, shortTimeout(t))
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
	a := newReplica(t, backend, p.Addr(), fast, shortTimeout(t))
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

// stallOnce makes the next command named name that client runs wait
// until its deadline and fail as a timed-out reply would.
type stallOnce struct{ name atomic.Pointer[string] }

func (h *stallOnce) arm(name string) { h.name.Store(&name) }

func (*stallOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stallOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := h.name.Load(); n != nil && cmd.Name() == *n && h.name.CompareAndSwap(n, nil) {
			<-ctx.Done()
			return ctx.Err()
		}
		return next(ctx, cmd)
	}
}

func (*stallOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestOneSlowReplyIsNoOutage: a single reply slower than the hot bound
// costs the call it belongs to a fallback to the store, and nothing more.
// A read that times out does not stop the next call reading Redis; a
// write that times out may have left Redis holding what it replaced, so
// the tier stops reading Redis only until that key is replayed — at once,
// not after a backoff (which the test sets to an hour).
func TestOneSlowReplyIsNoOutage(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	var hook stallOnce
	slowOnce := func(o *Options) { o.Redis.Client().AddHook(&hook) }
	noBackoff := func(o *Options) { o.tune = tuning{minBackoff: time.Hour, maxBackoff: time.Hour} }
	a := newReplica(t, backend, r.Addr(), noBackoff, shortTimeout(t), slowOnce)
	b := newReplica(t, backend, r.Addr())
	live(t, a)
	live(t, b)
	put(t, a, "acme", "ns", "k", `"v1"`, 0)
	get(t, b, "acme", "ns", "k") // Redis holds v1

	hook.arm("get")
	errs := a.Stats().RedisErrors
	if e, cached := get(t, a, "acme", "ns", "k"); cached || string(e.Value) != `"v1"` {
		t.Fatalf("a read whose Redis reply timed out: %s, cached %v; want v1 from the store", e.Value, cached)
	}
	if st := a.Stats(); st.RedisDegraded || st.RedisErrors != errs+1 {
		t.Fatalf("after one slow read: degraded %v, errors %d (were %d); want one fallback, no outage", st.RedisDegraded, st.RedisErrors, errs)
	}
	a.l1.flush()
	if _, cached := get(t, a, "acme", "ns", "k"); !cached {
		t.Fatal("the read after the slow one did not use Redis")
	}

	hook.arm("evalsha")
	put(t, a, "acme", "ns", "k", `"v2"`, 0)
	testutil.Eventually(t, testutil.Wait, "the missed write to be replayed", func() bool { return !a.Stats().RedisDegraded })
	// The replay's message reaches B's tier 1 over B's subscription, after
	// A's tier has recovered: B holds v1 until it arrives. Only A
	// publishes, so B has applied the replay once it has received as many
	// messages as A has published.
	sent := a.Stats().InvalidationsPublished
	testutil.Eventually(t, testutil.Wait, "B to apply the replayed invalidation", func() bool {
		return b.Stats().InvalidationsReceived >= sent
	})
	for _, s := range []*Store{a, b} {
		e, _ := get(t, s, "acme", "ns", "k")
		wantValue(t, e, `"v2"`)
	}
}

// TestCluster runs the cache tier on Redis Cluster: two replicas share
// values through tier 2 and invalidations through the channel, and the
// flush after too many missed invalidations finds the keys on every
// master.
func TestCluster(t *testing.T) {
	url := redistest.ClusterURL(t)
	backend := newBackend()
	conn, err := redisconn.Open(redisconn.Options{Mode: redisconn.Cluster, URL: url, Timeouts: redisconn.Timeouts{Hot: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	onCluster := func(o *Options) { o.Redis = conn }
	a := newReplica(t, backend, "", onCluster)
	b := newReplica(t, backend, "", onCluster)
	live(t, a)
	live(t, b)

	for i := range 20 { // keys enough to land on every master
		k := fmt.Sprint("k", i)
		put(t, backend, "acme", "ns", k, `"v1"`, 0) // in the database only
		get(t, a, "acme", "ns", k)                  // A fills tier 2
	}
	hits := b.Stats().RedisHits
	for i := range 20 {
		if e, cached := get(t, b, "acme", "ns", fmt.Sprint("k", i)); !cached || string(e.Value) != `"v1"` {
			t.Fatalf("k%d on B: %s, cached %v; want v1 from tier 2", i, e.Value, cached)
		}
	}
	if got := b.Stats().RedisHits - hits; got != 20 {
		t.Fatalf("B's tier-2 hits grew by %d, want 20", got)
	}
	put(t, a, "acme", "ns", "k0", `"v2"`, 0)
	testutil.Eventually(t, testutil.Wait, "B to see the new value", func() bool {
		e, _ := get(t, b, "acme", "ns", "k0")
		return string(e.Value) == `"v2"`
	})

	if err := a.t2.dropAll(); err != nil {
		t.Fatalf("dropping every key on the cluster: %v", err)
	}
	var left atomic.Int64 // ForEachMaster runs on every master at once
	cc := conn.Client().(*redis.ClusterClient)
	err = cc.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, globEscape(a.t2.prefix)+"*").Result()
		left.Add(int64(len(keys)))
		return err
	})
	if err != nil || left.Load() != 0 {
		t.Fatalf("after the flush: %d keys left, %v", left.Load(), err)
	}
}

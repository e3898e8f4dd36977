package tiered

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

func TestTier1HitAfterFirstRead(t *testing.T) {
	for _, withRedis := range []bool{false, true} {
		name := "no redis"
		if withRedis {
			name = "redis"
		}
		t.Run(name, func(t *testing.T) {
			addr := ""
			if withRedis {
				addr = redistest.Start(t).Addr()
			}
			backend := newBackend()
			s := newReplica(t, backend, addr)
			if withRedis {
				live(t, s)
			}
			put(t, s, "acme", "ns", "k", `"v1"`, 0)
			if withRedis {
				// The Store hears its own invalidation too; wait for it so
				// that it cannot drop the entry between the reads below.
				testutil.Eventually(t, testutil.Wait, "our own invalidation", func() bool { return s.Stats().InvalidationsReceived == 1 })
			}

			e, cached := get(t, s, "acme", "ns", "k")
			wantValue(t, e, `"v1"`)
			if withRedis && !cached {
				t.Fatal("first read after a write through this Store: want a tier-2 hit (write-through)")
			}
			gets := backend.gets.Load()
			for range 3 {
				e, cached = get(t, s, "acme", "ns", "k")
				wantValue(t, e, `"v1"`)
				if !cached {
					t.Fatal("repeated read: cached = false")
				}
			}
			if n := backend.gets.Load() - gets; n != 0 {
				t.Fatalf("repeated reads reached the store %d times", n)
			}
			if st := s.Stats(); st.L1.HitCount < 3 {
				t.Fatalf("L1 hits = %d, want >= 3", st.L1.HitCount)
			}
		})
	}
}

func TestMissThenPopulate(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	put(t, backend, "acme", "ns", "k", `"v1"`, 0) // behind the cache's back: nothing cached
	a := newReplica(t, backend, r.Addr())
	live(t, a)

	e, cached := get(t, a, "acme", "ns", "k")
	wantValue(t, e, `"v1"`)
	if cached {
		t.Fatal("first read: cached = true")
	}
	if _, ok := rawRedis(t, a, memKey("acme", "ns", "k")); !ok {
		t.Fatal("a miss did not populate tier 2")
	}
	// A missing entry is not cached anywhere.
	if _, _, err := a.LookupMemory(context.Background(), "acme", "ns", "absent"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("absent key: got %v, want ErrNotFound", err)
	}
	if _, ok := rawRedis(t, a, memKey("acme", "ns", "absent")); ok {
		t.Fatal("a not-found result was cached in tier 2")
	}
}

func TestSecondReplicaHitsTier2(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	a := newReplica(t, backend, r.Addr())
	b := newReplica(t, backend, r.Addr())
	live(t, a)
	live(t, b)

	put(t, backend, "acme", "ns", "k", `"v1"`, 0)
	if _, cached := get(t, a, "acme", "ns", "k"); cached {
		t.Fatal("replica A's first read: cached = true")
	}
	gets := backend.gets.Load()
	e, cached := get(t, b, "acme", "ns", "k")
	wantValue(t, e, `"v1"`)
	if !cached {
		t.Fatal("replica B's first read: want a tier-2 hit")
	}
	if st := b.Stats(); st.RedisHits != 1 {
		t.Fatalf("B's RedisHits = %d, want 1", st.RedisHits)
	}
	if backend.gets.Load() != gets {
		t.Fatal("replica B's read reached the store")
	}
	// Now in B's tier 1.
	if _, cached := get(t, b, "acme", "ns", "k"); !cached || b.Stats().L1.HitCount != 1 {
		t.Fatalf("B's second read: cached %v, L1 hits %d", cached, b.Stats().L1.HitCount)
	}
}

func TestWriteOnOneReplicaReachesTheOther(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	a := newReplica(t, backend, r.Addr())
	b := newReplica(t, backend, r.Addr())
	live(t, a)
	live(t, b)

	put(t, a, "acme", "ns", "k", `"v1"`, 0)
	get(t, b, "acme", "ns", "k")
	if _, cached := get(t, b, "acme", "ns", "k"); !cached {
		t.Fatal("B does not hold the entry in tier 1")
	}

	put(t, a, "acme", "ns", "k", `"v2"`, 0)
	testutil.Eventually(t, testutil.Wait, "B to see v2", func() bool {
		e, _ := get(t, b, "acme", "ns", "k")
		return string(e.Value) == `"v2"`
	})
	if b.Stats().InvalidationsReceived == 0 || a.Stats().InvalidationsPublished == 0 {
		t.Fatalf("invalidations: A published %d, B received %d", a.Stats().InvalidationsPublished, b.Stats().InvalidationsReceived)
	}

	// Deletes travel the same way, and a delete leaves a tombstone.
	if err := a.DeleteMemory(context.Background(), "acme", "ns", "k"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Wait, "B to see the delete", func() bool {
		_, _, err := b.LookupMemory(context.Background(), "acme", "ns", "k")
		return errors.Is(err, store.ErrNotFound)
	})
	if v, _ := rawRedis(t, a, memKey("acme", "ns", "k")); v != tombstone {
		t.Fatalf("tier 2 after a delete holds %q, want a tombstone", v)
	}
}

func TestSessionsAndAgentsAcrossReplicas(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	a := newReplica(t, backend, r.Addr())
	b := newReplica(t, backend, r.Addr())
	live(t, a)
	live(t, b)
	ctx := context.Background()

	sess, err := a.CreateSession(ctx, "acme", store.NewSession{Task: "t", Initiator: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, cached, err := b.LookupSession(ctx, "acme", sess.ID); err != nil || !cached {
		t.Fatalf("B's first read of a new session: cached %v, err %v; want a tier-2 hit", cached, err)
	}
	if _, err := a.JoinSession(ctx, "acme", sess.ID, "bob", store.RoleCollaborator, 10); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Wait, "B to see bob join", func() bool {
		got, err := b.GetSession(ctx, "acme", sess.ID)
		return err == nil && len(got.Participants) == 2
	})
	if _, err := a.CompleteSession(ctx, "acme", sess.ID, "done"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Wait, "B to see the session completed", func() bool {
		got, err := b.GetSession(ctx, "acme", sess.ID)
		return err == nil && got.Status == store.SessionCompleted
	})

	if _, err := a.RegisterAgent(ctx, "acme", store.Agent{ID: "bot", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	if _, cached, err := b.LookupAgent(ctx, "acme", "bot"); err != nil || !cached {
		t.Fatalf("B's first read of a registered agent: cached %v, err %v", cached, err)
	}
	if _, cached, _ := b.LookupAgent(ctx, "acme", "bot"); !cached {
		t.Fatal("B's second read of the agent missed tier 1")
	}
	if err := a.RemoveAgent(ctx, "acme", "bot"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Wait, "B to see the agent removed", func() bool {
		_, err := b.GetAgent(ctx, "acme", "bot")
		return errors.Is(err, store.ErrNotFound)
	})
}

func TestBulkDeleteInvalidatesEveryKey(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	a := newReplica(t, backend, r.Addr())
	b := newReplica(t, backend, r.Addr())
	live(t, a)
	live(t, b)
	keys := []string{"p/1", "p/2", "p/3", "q"}
	for _, k := range keys {
		put(t, a, "acme", "ns", k, `1`, 0)
		get(t, b, "acme", "ns", k)
	}
	removed, err := a.BulkDeleteMemory(context.Background(), "acme", "ns", nil, "p/")
	if err != nil || len(removed) != 3 {
		t.Fatalf("BulkDeleteMemory: %v, %v", removed, err)
	}
	testutil.Eventually(t, testutil.Wait, "B to drop every deleted key", func() bool {
		for _, k := range keys[:3] {
			if _, _, err := b.LookupMemory(context.Background(), "acme", "ns", k); !errors.Is(err, store.ErrNotFound) {
				return false
			}
		}
		return true
	})
	if _, cached := get(t, b, "acme", "ns", "q"); !cached {
		t.Fatal("a key the bulk delete did not touch was dropped")
	}
}

// TestTenantIsolation: two tenants with the same namespace, key and ids
// never see each other's cached values, in either tier, on either replica.
func TestTenantIsolation(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	a := newReplica(t, backend, r.Addr())
	b := newReplica(t, backend, r.Addr())
	live(t, a)
	live(t, b)
	ctx := context.Background()

	put(t, a, "tenant-a", "ns", "k", `"a"`, 0)
	if _, cached := get(t, a, "tenant-a", "ns", "k"); !cached {
		t.Fatal("tenant A's value is not cached")
	}
	for _, s := range []*Store{a, b} {
		if _, _, err := s.LookupMemory(ctx, "tenant-b", "ns", "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tenant B read (ns, k): got %v, want ErrNotFound", err)
		}
	}
	put(t, b, "tenant-b", "ns", "k", `"b"`, 0)
	for _, s := range []*Store{a, b} {
		for range 2 { // tier 2, then tier 1
			ea, _ := get(t, s, "tenant-a", "ns", "k")
			eb, _ := get(t, s, "tenant-b", "ns", "k")
			wantValue(t, ea, `"a"`)
			wantValue(t, eb, `"b"`)
		}
	}
	// A write by tenant B leaves tenant A's copies alone.
	put(t, b, "tenant-b", "ns", "k", `"b2"`, 0)
	testutil.Eventually(t, testutil.Wait, "A's replica to see b2", func() bool {
		e, _ := get(t, a, "tenant-b", "ns", "k")
		return string(e.Value) == `"b2"`
	})
	if e, cached := get(t, a, "tenant-a", "ns", "k"); !cached || string(e.Value) != `"a"` {
		t.Fatalf("tenant A after B's write: %s, cached %v", e.Value, cached)
	}

	// Agents and sessions too.
	if _, err := a.RegisterAgent(ctx, "tenant-a", store.Agent{ID: "bot", Description: "a's"}); err != nil {
		t.Fatal(err)
	}
	get := func(s *Store, tenant string) error { _, _, err := s.LookupAgent(ctx, tenant, "bot"); return err }
	if err := get(a, "tenant-a"); err != nil {
		t.Fatal(err)
	}
	if err := get(b, "tenant-b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant B's agent lookup: %v, want ErrNotFound", err)
	}

	// And the keys themselves: no two tenants share one.
	ka, kb := memKey("tenant-a", "ns", "k"), memKey("tenant-b", "ns", "k")
	if ka == kb || redisKey("p:", ka) == redisKey("p:", kb) {
		t.Fatal("keys of two tenants are equal")
	}
	// Parts cannot slide into each other: ("a:b", "c") vs ("a", "b:c").
	if redisKey("p:", memKey("t", "a:b", "c")) == redisKey("p:", memKey("t", "a", "b:c")) {
		t.Fatal("redis keys are ambiguous")
	}
}

// TestExpiryHonoured: an entry with a TTL is cached no longer than it
// lives, in either tier, and is never served once expired.
func TestExpiryHonoured(t *testing.T) {
	r := redistest.Start(t)
	clock := stillClock()
	backend := newBackendAt(clock.Now)
	a := newReplica(t, backend, r.Addr(), withClock(clock.Now))
	b := newReplica(t, backend, r.Addr(), withClock(clock.Now))
	live(t, a)
	live(t, b)
	ctx := context.Background()

	// Read through a miss, so that the populate path sets the TTLs.
	e := put(t, backend, "acme", "ns", "short", `"x"`, 800*time.Millisecond)
	get(t, a, "acme", "ns", "short")
	if _, cached := get(t, a, "acme", "ns", "short"); !cached {
		t.Fatal("a living entry is not cached")
	}
	pttl, err := a.t2.rdb.PTTL(ctx, a.t2.key(memKey("acme", "ns", "short"))).Result()
	if err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	if pttl <= 0 || pttl > 800*time.Millisecond {
		t.Fatalf("tier-2 TTL %v, want (0, 800ms]", pttl)
	}
	if it, ok := a.l1.c.Peek(memKey("acme", "ns", "short")); !ok || it.TTL > 800*time.Millisecond {
		t.Fatalf("tier-1 TTL %v (present %v), want at most 800ms", it.TTL, ok)
	}
	if _, cached := get(t, b, "acme", "ns", "short"); !cached {
		t.Fatal("B: want a tier-2 hit on a living entry")
	}

	clock.Advance(e.ExpiresAt.Sub(clock.Now())) // the instant it expires
	for _, s := range []*Store{a, b} {
		if _, _, err := s.LookupMemory(ctx, "acme", "ns", "short"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("expired entry: got %v, want ErrNotFound", err)
		}
	}

	// A write of a value that lives less than a tombstone does not put
	// the value in tier 2 (see doc.go); reads still see it while it lives.
	put(t, a, "acme", "ns", "brief", `"y"`, 2*time.Second)
	if v, _ := rawRedis(t, a, memKey("acme", "ns", "brief")); v != tombstone {
		t.Fatalf("tier 2 holds %q for a value living less than a tombstone, want a tombstone", v)
	}
	if e, _ := get(t, b, "acme", "ns", "brief"); string(e.Value) != `"y"` {
		t.Fatalf("B read %s", e.Value)
	}
}

// TestExpiredNeverServedFromTier1 uses a value whose tier-1 copy outlives
// it (a cache TTL longer than the entry, as a clock step could cause), to
// check the explicit expiry test on the hit path.
func TestExpiredNeverServedFromTier1(t *testing.T) {
	clock := stillClock()
	backend := newBackendAt(clock.Now)
	s := newReplica(t, backend, "", withClock(clock.Now))
	e := put(t, backend, "acme", "ns", "k", `1`, 300*time.Millisecond)
	e.Value = []byte(`2`)
	k := memKey("acme", "ns", "k")
	if err := s.l1.c.Set(k, &item{gen: s.l1.gen.Load(), size: 1, val: &e}, cache.WithTTL(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, cached := get(t, s, "acme", "ns", "k"); !cached || string(got.Value) != `2` {
		t.Fatalf("planted entry: %s, cached %v", got.Value, cached)
	}
	clock.Advance(e.ExpiresAt.Sub(clock.Now())) // the instant it expires
	if _, _, err := s.LookupMemory(context.Background(), "acme", "ns", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

func TestCloseClosesNextAndIsIdempotent(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	s := newReplica(t, backend, r.Addr())
	live(t, s)
	s.Close()
	s.Close()
	if n := backend.closed.Load(); n != 1 {
		t.Fatalf("next closed %d times, want 1", n)
	}
}

func TestNewRejectsClientWithoutContextTimeouts(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // ContextTimeoutEnabled: false
	defer c.Close()
	if _, err := New(context.Background(), newBackend(), Options{Redis: redisconn.New(c, redisconn.Options{})}); err == nil {
		t.Fatal("New accepted a client that ignores context deadlines")
	}
}

func TestCancelledContext(t *testing.T) {
	s := newReplica(t, newBackend(), "")
	put(t, s, "acme", "ns", "k", `1`, 0)
	get(t, s, "acme", "ns", "k")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.LookupMemory(ctx, "acme", "ns", "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cached key, cancelled context: got %v, want context.Canceled", err)
	}
}

// TestLookupSharesGetCopies pins down the read-only rule of the package
// documentation: Lookup hands out the cached value itself, Get a copy the
// caller may modify.
func TestLookupSharesGetCopies(t *testing.T) {
	s := newReplica(t, newBackend(), "")
	put(t, s, "acme", "ns", "k", `"abc"`, time.Hour)
	get(t, s, "acme", "ns", "k") // now in tier 1

	g, err := s.GetMemory(context.Background(), "acme", "ns", "k")
	if err != nil {
		t.Fatal(err)
	}
	g.Value[1], g.Tags[0] = 'X', "mutated"
	*g.ExpiresAt = time.Time{}
	l1, _ := get(t, s, "acme", "ns", "k")
	if string(l1.Value) != `"abc"` || l1.Tags[0] != "t" || l1.ExpiresAt.IsZero() {
		t.Fatalf("modifying GetMemory's result changed the cache: %s %v %v", l1.Value, l1.Tags, l1.ExpiresAt)
	}
	l2, _ := get(t, s, "acme", "ns", "k")
	if &l1.Value[0] != &l2.Value[0] || &l1.Tags[0] != &l2.Tags[0] {
		t.Fatal("LookupMemory copied: the documented sharing no longer holds (update doc.go)")
	}
}

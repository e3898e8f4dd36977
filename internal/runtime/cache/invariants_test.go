package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// One test per invariant of runtime-invariants.md, named after its ID.
// property_test.go checks the same invariants after every step of random
// operation sequences, against a reference model.

func TestINV_MCP_CACHE_001_SizeBound(t *testing.T) {
	t.Run("after every Set", func(t *testing.T) {
		for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
			cfg := testConfig()
			cfg.MaxSizeBytes, cfg.EvictionPolicy = 1000, pol
			c := mustNew(t, cfg, WithSizer(lenSizer[int]))
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 3000 {
				_ = c.Set(rng.IntN(200), make([]byte, rng.IntN(400)))
				if i%7 == 0 {
					c.Get(rng.IntN(200))
				}
				if s := c.Stats(); s.CurrentSizeBytes > cfg.MaxSizeBytes {
					t.Fatalf("%s: step %d: currentSizeBytes %d > maxSizeBytes %d", pol, i, s.CurrentSizeBytes, cfg.MaxSizeBytes)
				}
				mustCheck(t, c)
			}
		}
	})

	t.Run("crossing the high water mark evicts to the low one", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxSizeBytes, cfg.HighWaterMark, cfg.LowWaterMark = 1000, 0.9, 0.7
		c := mustNew(t, cfg, WithSizer(lenSizer[int]))
		for i := range 90 { // exactly at the high mark: no eviction yet
			if err := c.Set(i, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
		}
		if s := c.Stats(); s.CurrentSizeBytes != 900 || s.EvictionCount != 0 {
			t.Fatalf("at the mark: %+v", s)
		}
		if err := c.Set(90, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		s := c.Stats()
		if s.CurrentSizeBytes != 700 || s.EntryCount != 70 || s.EvictionCount != 21 {
			t.Fatalf("after crossing: size %d, entries %d, evictions %d; want 700, 70, 21",
				s.CurrentSizeBytes, s.EntryCount, s.EvictionCount)
		}
		if _, ok := c.Peek(20); ok {
			t.Error("entry 20 (least recent) survived")
		}
		if _, ok := c.Peek(21); !ok {
			t.Error("entry 21 evicted though the low mark was reached without it")
		}
	})

	t.Run("an entry larger than the cache is refused and evicts nothing", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxSizeBytes = 1000
		c := mustNew(t, cfg, WithSizer(lenSizer[int]))
		for i := range 5 {
			_ = c.Set(i, make([]byte, 100))
		}
		err := c.Set(99, make([]byte, 1001))
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Set 1001 bytes: %v, want ErrTooLarge", err)
		}
		if s := c.Stats(); s.EntryCount != 5 || s.EvictionCount != 0 || s.CurrentSizeBytes != 500 {
			t.Fatalf("refusal changed the cache: %+v", s)
		}
		// Replacing a key with a too-large value removes the stale value.
		if err := c.Set(3, make([]byte, 5000)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("replace with 5000 bytes: %v", err)
		}
		if _, ok := c.Get(3); ok {
			t.Error("the old value of a key whose replacement was refused is still served")
		}
		// An entry of exactly maxSizeBytes fits, alone.
		if err := c.Set(7, make([]byte, 1000)); err != nil {
			t.Fatalf("Set exactly maxSizeBytes: %v", err)
		}
		if s := c.Stats(); s.EntryCount != 1 || s.CurrentSizeBytes != 1000 {
			t.Fatalf("after a full-size entry: %+v", s)
		}
	})

	t.Run("default sizer", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxSizeBytes = 1 << 20
		c := mustNew[string, []byte](t, cfg)
		for i := range 100 {
			_ = c.Set(fmt.Sprint("k", i), make([]byte, 100<<10))
			if s := c.Stats(); s.CurrentSizeBytes > cfg.MaxSizeBytes {
				t.Fatalf("step %d: %d > %d", i, s.CurrentSizeBytes, cfg.MaxSizeBytes)
			}
		}
		// 100 KiB values in a 1 MiB cache: at most 9 fit under the 0.9 mark.
		if n := c.Len(); n < 6 || n > 9 {
			t.Fatalf("%d entries of 100 KiB in 1 MiB", n)
		}
	})
}

func TestINV_MCP_CACHE_002_EntryBound(t *testing.T) {
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		t.Run(pol, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxEntries, cfg.EvictionPolicy = 5, pol
			c := mustNew[int, string](t, cfg)
			for i := range 100 {
				if err := c.Set(i, "v"); err != nil {
					t.Fatal(err)
				}
				s := c.Stats()
				if s.EntryCount > cfg.MaxEntries {
					t.Fatalf("step %d: %d entries > maxEntries %d", i, s.EntryCount, cfg.MaxEntries)
				}
				// Full by count: each new key evicts exactly one entry.
				if want := uint64(max(0, i+1-cfg.MaxEntries)); s.EvictionCount != want {
					t.Fatalf("step %d: %d evictions, want %d", i, s.EvictionCount, want)
				}
				mustCheck(t, c)
			}
			// Replacing a present key in a full cache evicts nothing.
			before := c.Stats().EvictionCount
			if err := c.Set(99, "new"); err != nil {
				t.Fatal(err)
			}
			if s := c.Stats(); s.EvictionCount != before || s.EntryCount != 5 {
				t.Fatalf("replace in a full cache: %+v", s)
			}
		})
	}
}

func TestINV_MCP_CACHE_003_TTLExpiration(t *testing.T) {
	clk := newFakeClock()
	var expired []string
	var mu sync.Mutex
	cfg := testConfig()
	cfg.DefaultTTL = time.Minute
	c := mustNew(t, cfg, WithClock[string, string](clk.Now),
		WithOnEvict(func(k, _ string, r EvictReason) {
			if r != EvictExpired {
				t.Errorf("%s left for %v", k, r)
			}
			mu.Lock()
			expired = append(expired, k)
			mu.Unlock()
		}))

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set("default", "a"))
	must(c.Set("short", "b", WithTTL(10*time.Second)))
	must(c.Set("forever", "c", WithTTL(0)))
	if err := c.Set("negative", "d", WithTTL(-time.Second)); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("negative TTL: %v", err)
	}

	hit := func(key string, want bool) {
		t.Helper()
		if _, ok := c.Get(key); ok != want {
			t.Fatalf("Get(%q) at %v: hit %v, want %v", key, clk.Now(), ok, want)
		}
	}
	clk.Advance(10 * time.Second) // now == createdAt + ttl: not yet expired
	hit("short", true)
	clk.Advance(time.Nanosecond) // now > createdAt + ttl
	if _, ok := c.Peek("short"); ok {
		t.Fatal("Peek returned an expired entry")
	}
	hit("short", false)
	hit("default", true)
	clk.Advance(time.Minute)
	if c.Delete("default") {
		t.Fatal("Delete reported an expired entry as present")
	}
	hit("default", false)
	clk.Advance(100 * 365 * 24 * time.Hour)
	hit("forever", true)

	// An expired entry nobody reads is removed by the cleanup sweep.
	must(c.Set("unread", "e", WithTTL(time.Second)))
	clk.Advance(2 * time.Second)
	if n := c.Len(); n != 2 {
		t.Fatalf("Len before cleanup = %d, want 2 (forever, unread)", n)
	}
	c.cleanup()
	if n := c.Len(); n != 1 {
		t.Fatalf("Len after cleanup = %d, want 1", n)
	}

	mu.Lock()
	defer mu.Unlock()
	if want := []string{"short", "default", "unread"}; !slices.Equal(expired, want) {
		t.Fatalf("OnEvict(expired) for %v, want %v", expired, want)
	}
	if s := c.Stats(); s.ExpiredCount != 3 || s.MissCount != 2 || s.HitCount != 3 {
		t.Fatalf("stats: %+v", s)
	}

	t.Run("defaultTtlMs 0 means no expiry", func(t *testing.T) {
		clk := newFakeClock()
		cfg := testConfig()
		cfg.DefaultTTL = 0
		c := mustNew(t, cfg, WithClock[string, int](clk.Now))
		_ = c.Set("k", 1)
		clk.Advance(1000 * time.Hour)
		if _, ok := c.Get("k"); !ok {
			t.Fatal("entry without TTL expired")
		}
	})
}

func TestINV_MCP_CACHE_004_LRUOrdering(t *testing.T) {
	t.Run("Get makes an entry most recent", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxEntries = 3
		c := mustNew[string, int](t, cfg)
		_ = c.Set("a", 1)
		_ = c.Set("b", 2)
		_ = c.Set("c", 3)
		c.Get("a")
		_ = c.Set("d", 4)
		if _, ok := c.Peek("b"); ok {
			t.Fatal("b (least recently used) survived")
		}
		for _, k := range []string{"a", "c", "d"} {
			if _, ok := c.Peek(k); !ok {
				t.Fatalf("%s evicted", k)
			}
		}
	})

	t.Run("evicted entries were accessed no later than every remaining one", func(t *testing.T) {
		clk := newFakeClock()
		cfg := testConfig()
		cfg.MaxEntries = 16
		var evicted []int
		c := mustNew(t, cfg, WithClock[int, int](clk.Now),
			WithOnEvict(func(k, _ int, _ EvictReason) { evicted = append(evicted, k) }))
		rng := rand.New(rand.NewPCG(3, 4))
		next := 0
		for range 500 {
			clk.Advance(time.Millisecond)
			if rng.IntN(3) > 0 {
				c.Get(rng.IntN(next + 1))
				continue
			}
			// Note every entry's lastAccessedAt, then insert.
			last := map[int]time.Time{}
			for k := range next {
				if it, ok := c.Peek(k); ok {
					last[k] = it.LastAccessedAt
				}
			}
			evicted = evicted[:0]
			_ = c.Set(next, next)
			next++
			for _, ev := range evicted {
				for k, at := range last {
					if k == ev || slices.Contains(evicted, k) {
						continue
					}
					if at.Before(last[ev]) {
						t.Fatalf("evicted %d (accessed %v) while %d (accessed %v) stayed",
							ev, last[ev], k, at)
					}
				}
			}
		}
	})
}

func TestINV_MCP_CACHE_005_AtomicOperations(t *testing.T) {
	const valueSize = 16
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		t.Run(pol, func(t *testing.T) {
			cfg := testConfig()
			cfg.EvictionPolicy = pol
			cfg.MaxEntries = 64
			cfg.MaxSizeBytes = 50 * valueSize
			cfg.DefaultTTL = 2 * time.Millisecond
			cfg.CleanupInterval = time.Millisecond // the sweep races the callers too
			c := mustNew(t, cfg, WithSizer(lenSizer[int]))

			// Every value is valueSize copies of one byte, derived from
			// the key and a version; a reader must only ever see whole
			// values, and every Stats snapshot must agree with itself.
			value := func(k, version int) []byte {
				b := make([]byte, valueSize)
				for i := range b {
					b[i] = byte(k*7 + version)
				}
				return b
			}
			var gets, bad atomic.Int64
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 5))
					for range 3000 {
						k := rng.IntN(100)
						switch rng.IntN(4) {
						case 0, 1:
							gets.Add(1)
							if v, ok := c.Get(k); ok {
								if len(v) != valueSize || (v[0] != byte(k*7) && v[0] != byte(k*7+1)) || slices.ContainsFunc(v, func(b byte) bool { return b != v[0] }) {
									bad.Add(1)
								}
							}
						case 2:
							_ = c.Set(k, value(k, rng.IntN(2)), WithPriority(Priority(1+rng.IntN(3))))
						case 3:
							c.Delete(k)
						}
						s := c.Stats()
						if s.CurrentSizeBytes != int64(s.EntryCount)*valueSize ||
							s.EntryCount > cfg.MaxEntries || s.CurrentSizeBytes > cfg.MaxSizeBytes {
							bad.Add(1)
						}
					}
				})
			}
			wg.Go(func() {
				for range 200 {
					if err := c.check(); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(50 * time.Microsecond)
				}
			})
			wg.Wait()
			if n := bad.Load(); n > 0 {
				t.Fatalf("%d torn values or inconsistent snapshots", n)
			}
			mustCheck(t, c)
			if s := c.Stats(); int64(s.HitCount+s.MissCount) != gets.Load() {
				t.Fatalf("hits %d + misses %d != %d Gets", s.HitCount, s.MissCount, gets.Load())
			}
		})
	}
}

func TestINV_MCP_CACHE_006_SizeAccuracy(t *testing.T) {
	type doc struct {
		Name string
		Tags []string
		Meta map[string]any
	}
	clk := newFakeClock()
	cfg := testConfig()
	cfg.MaxSizeBytes = 64 << 10
	cfg.DefaultTTL = 50 * time.Millisecond
	c := mustNew(t, cfg, WithClock[string, any](clk.Now))
	sizer := DefaultSizer[string, any]()
	rng := rand.New(rand.NewPCG(6, 7))
	values := []func() any{
		func() any { return make([]byte, rng.IntN(2000)) },
		func() any { return string(make([]byte, rng.IntN(2000))) },
		func() any { return rng.IntN(1000) },
		func() any {
			return &doc{Name: "n", Tags: make([]string, rng.IntN(20)), Meta: map[string]any{"k": rng.Float64()}}
		},
	}
	for i := range 5000 {
		k := fmt.Sprint("key-", rng.IntN(300))
		switch rng.IntN(5) {
		case 0, 1:
			_ = c.Set(k, values[rng.IntN(len(values))]())
		case 2:
			c.Get(k)
		case 3:
			c.Delete(k)
		case 4:
			clk.Advance(time.Duration(rng.IntN(10)) * time.Millisecond)
		}
		if i%100 == 0 {
			c.cleanup()
		}
		// |currentSizeBytes - sum(entries.sizeBytes)| / currentSizeBytes < 0.01,
		// and each entry's size is its sizer's answer for what it holds.
		c.mu.Lock()
		var sum int64
		for k, e := range c.items {
			if want := sizer(k, e.value); e.size != want {
				t.Fatalf("step %d: entry %s sized %d, sizer says %d", i, k, e.size, want)
			}
			sum += e.size
		}
		cur := c.curSize
		c.mu.Unlock()
		if diff := cur - sum; cur > 0 && float64(max(diff, -diff))/float64(cur) >= 0.01 {
			t.Fatalf("step %d: currentSizeBytes %d, entries sum to %d", i, cur, sum)
		}
		if cur != sum {
			t.Fatalf("step %d: currentSizeBytes %d drifted from %d", i, cur, sum)
		}
	}

	// Cleanup recomputes the size from the entries, whatever the counter
	// says, and records when it ran.
	c.mu.Lock()
	c.curSize += 12345
	c.mu.Unlock()
	clk.Advance(time.Second)
	c.cleanup()
	mustCheck(t, c)
	if s := c.Stats(); !s.LastCleanupAt.Equal(clk.Now()) {
		t.Fatalf("lastCleanupAt %v, want %v", s.LastCleanupAt, clk.Now())
	}
}

func TestINV_MCP_XC_003_CloseStopsCleanup(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	cfg := DefaultConfig()
	cfg.CleanupInterval = time.Millisecond
	c, err := New[string, string](cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Set("k", "v")
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().LastCleanupAt.IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the cleanup goroutine never ran")
		}
		time.Sleep(time.Millisecond)
	}

	var wg sync.WaitGroup
	for range 4 { // Close is idempotent and safe to call concurrently
		wg.Go(c.Close)
	}
	wg.Wait()
	goleak.VerifyNone(t, ignore)

	if err := c.Set("k", "v"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after Close: %v, want ErrClosed", err)
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("Get after Close hit")
	}
	if c.Len() != 0 || c.Delete("k") {
		t.Fatal("entries survived Close")
	}
}

package cache

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrency tests: run them with -race. INV-MCP-CACHE-005 has its own
// test in invariants_test.go; these add the real clock, expiry, the
// cleanup goroutine and re-entrant callbacks to the mix.

func TestConcurrentMixed(t *testing.T) {
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		t.Run(pol, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.EvictionPolicy = pol
			cfg.MaxEntries = 200
			cfg.MaxSizeBytes = 64 << 10
			cfg.DefaultTTL = time.Millisecond
			cfg.CleanupInterval = time.Millisecond
			var evicted atomic.Int64
			c := mustNew(t, cfg, WithOnEvict(func(string, []byte, EvictReason) { evicted.Add(1) }))
			keys := make([]string, 500)
			for i := range keys {
				keys[i] = "key-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			}

			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 9))
					for range 5000 {
						k := keys[rng.IntN(len(keys))]
						switch rng.IntN(10) {
						case 0, 1, 2, 3:
							c.Get(k)
						case 4, 5, 6:
							_ = c.Set(k, make([]byte, rng.IntN(1024)),
								WithTTL(time.Duration(rng.IntN(3))*time.Millisecond),
								WithPriority(Priority(1+rng.IntN(3))))
						case 7:
							c.Delete(k)
						case 8:
							c.Peek(k)
						case 9:
							s := c.Stats()
							if s.CurrentSizeBytes > cfg.MaxSizeBytes || s.EntryCount > cfg.MaxEntries {
								t.Errorf("bounds broken: %+v", s)
							}
						}
					}
				})
			}
			wg.Go(func() {
				for range 100 {
					if err := c.check(); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
			})
			wg.Wait()
			mustCheck(t, c)
			s := c.Stats()
			if got := evicted.Load(); uint64(got) != s.EvictionCount+s.ExpiredCount {
				t.Fatalf("OnEvict called %d times; stats count %d evictions + %d expirations",
					got, s.EvictionCount, s.ExpiredCount)
			}
		})
	}
}

// TestOnEvictCalledWithoutLock has the callback use the cache: if the lock
// were held during the call, it would deadlock.
func TestOnEvictCalledWithoutLock(t *testing.T) {
	cfg := testConfig()
	cfg.MaxEntries = 2
	clk := newFakeClock()
	var c *Cache[int, int]
	var calls atomic.Int64
	c = mustNew(t, cfg, WithClock[int, int](clk.Now), WithOnEvict(func(k, v int, _ EvictReason) {
		calls.Add(1)
		c.Stats()
		c.Peek(k)
		if k < 100 {
			_ = c.Set(k+100, v) // may evict again, recursively
		}
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 {
			_ = c.Set(i, i, WithTTL(time.Second))
		}
		clk.Advance(2 * time.Second)
		c.Get(9)    // expiry found by Get
		c.Delete(8) // and by Delete
		c.cleanup() // and by the sweep
		_ = c.Set(50, 50)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock: OnEvict called with the lock held")
	}
	if calls.Load() == 0 {
		t.Fatal("OnEvict never called")
	}
	mustCheck(t, c)
}

// TestConcurrentSameKey races Sets of one key with Gets and Deletes: a
// reader sees one of the written values or nothing, never a mix, and the
// accounting ends exact.
func TestConcurrentSameKey(t *testing.T) {
	cfg := testConfig()
	c := mustNew[string, string](t, cfg)
	values := []string{"short", "a considerably longer value", ""}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 2000 {
				switch (g + i) % 3 {
				case 0:
					_ = c.Set("k", values[i%len(values)])
				case 1:
					if v, ok := c.Get("k"); ok && v != values[0] && v != values[1] && v != values[2] {
						t.Errorf("Get returned %q", v)
					}
				case 2:
					c.Delete("k")
				}
			}
		})
	}
	wg.Wait()
	mustCheck(t, c)
	if c.Len() > 1 {
		t.Fatalf("%d entries for one key", c.Len())
	}
}

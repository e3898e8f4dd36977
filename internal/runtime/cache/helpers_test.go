package cache

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for WithClock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// testConfig is DefaultConfig with a cleanup interval long enough that the
// background sweep never runs during a test that calls cleanup itself.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.CleanupInterval = time.Hour
	return cfg
}

// mustNew creates a cache closed at the end of the test.
func mustNew[K comparable, V any](t testing.TB, cfg Config, opts ...Option[K, V]) *Cache[K, V] {
	t.Helper()
	c, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// lenSizer charges exactly len(v) bytes, for tests that need round numbers.
func lenSizer[K comparable](_ K, v []byte) int64 { return int64(len(v)) }

// check verifies, under the lock, every structural invariant: the bounds
// (INV-MCP-CACHE-001, -002), the size sum (INV-MCP-CACHE-006) and the
// consistency of the map, the tier lists and the expiry index.
func (c *Cache[K, V]) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.curSize > c.cfg.MaxSizeBytes {
		fail("INV-MCP-CACHE-001: currentSizeBytes %d > maxSizeBytes %d", c.curSize, c.cfg.MaxSizeBytes)
	}
	if len(c.items) > c.cfg.MaxEntries {
		fail("INV-MCP-CACHE-002: %d entries > maxEntries %d", len(c.items), c.cfg.MaxEntries)
	}
	var sum int64
	withTTL := 0
	for k, e := range c.items {
		if e.key != k {
			fail("map key %v holds entry for %v", k, e.key)
		}
		sum += e.size
		if e.ttl > 0 {
			withTTL++
			if e.class == nil || e.class.ttl != e.ttl {
				fail("entry %v with TTL %d not in its expiry class", k, e.ttl)
			}
		} else if e.class != nil {
			fail("entry %v without TTL in an expiry class", k)
		}
	}
	if sum != c.curSize {
		fail("INV-MCP-CACHE-006: currentSizeBytes %d, entries sum to %d", c.curSize, sum)
	}

	listed := 0
	checkList := func(l *list[K, V], tier Priority, what string) {
		n := 0
		var prev *entry[K, V]
		for e := l.head; e != nil; e = e.next {
			if e.prev != prev {
				fail("%s: broken prev link at %v", what, e.key)
			}
			if c.items[e.key] != e {
				fail("%s: entry %v not in the map", what, e.key)
			}
			if e.priority != tier {
				fail("%s: entry %v has priority %v", what, e.key, e.priority)
			}
			prev = e
			n++
		}
		if l.tail != prev || l.n != n {
			fail("%s: tail or count wrong (n=%d, walked %d)", what, l.n, n)
		}
		listed += n
	}
	for i, p := range c.tiers {
		tier := Priority(i + 1)
		switch p := p.(type) {
		case *recencyPolicy[K, V]:
			checkList(&p.l, tier, "tier "+tier.String())
		case *lfuPolicy[K, V]:
			n := 0
			var prev *lfuBucket[K, V]
			for b := p.head; b != nil; b = b.next {
				if b.prev != prev || (prev != nil && prev.freq >= b.freq) || b.items.n == 0 {
					fail("lfu tier %v: bucket %d out of order or empty", tier, b.freq)
				}
				for e := b.items.head; e != nil; e = e.next {
					if e.bucket != b {
						fail("lfu tier %v: entry %v points at the wrong bucket", tier, e.key)
					}
					if e.hits+1 != b.freq { // the insert plus every hit
						fail("lfu tier %v: entry %v has %d hits in bucket %d", tier, e.key, e.hits, b.freq)
					}
				}
				checkList(&b.items, tier, fmt.Sprintf("lfu tier %v bucket %d", tier, b.freq))
				n += b.items.n
				prev = b
			}
			if p.tail != prev || p.n != n {
				fail("lfu tier %v: tail or count wrong", tier)
			}
		}
	}
	if listed != len(c.items) {
		fail("tier lists hold %d entries, map %d", listed, len(c.items))
	}

	x := &c.expiry
	if len(x.heap) != len(x.classes) {
		fail("expiry: %d classes, heap of %d", len(x.classes), len(x.heap))
	}
	indexed := 0
	for i, cl := range x.heap {
		if cl.idx != i || x.classes[cl.ttl] != cl {
			fail("expiry: class %d misplaced", cl.ttl)
		}
		if i > 0 && x.less(i, (i-1)/2) {
			fail("expiry: heap order broken at %d", i)
		}
		var prev *entry[K, V]
		for e := cl.head; e != nil; e = e.enext {
			if e.eprev != prev || e.class != cl || c.items[e.key] != e {
				fail("expiry: class %d broken at %v", cl.ttl, e.key)
			}
			if prev != nil && expiresBefore(e, prev) {
				fail("expiry: class %d out of order at %v", cl.ttl, e.key)
			}
			prev = e
			indexed++
		}
		if cl.tail != prev {
			fail("expiry: class %d tail wrong", cl.ttl)
		}
	}
	if indexed != withTTL {
		fail("expiry: %d entries indexed, %d have a TTL", indexed, withTTL)
	}
	return errors.Join(errs...)
}

func mustCheck[K comparable, V any](t testing.TB, c *Cache[K, V]) {
	t.Helper()
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
}

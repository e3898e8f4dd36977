package cache

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestSoak fills a cache with values of random sizes (64 B to 64 KiB) for
// MCP_SOAK (a duration, e.g. 5m) and samples the heap every tenth of the
// run: with the cache bounded by maxSizeBytes, the heap must stay flat.
// Not part of `make test`; run with
//
//	MCP_SOAK=5m go test -run TestSoak -v ./internal/runtime/cache/
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("MCP_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set MCP_SOAK to a duration to run the soak test")
	}
	cfg := DefaultConfig()
	cfg.MaxSizeBytes = 64 << 20
	cfg.MaxEntries = 100_000
	cfg.DefaultTTL = 30 * time.Second
	cfg.CleanupInterval = time.Second
	c, err := New[string, []byte](cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	rng := rand.New(rand.NewPCG(1, 2))
	start, next := time.Now(), time.Now()
	var ops int
	var first, peak uint64
	for time.Since(start) < d {
		for range 1000 {
			key := strconv.Itoa(rng.IntN(500_000))
			if rng.IntN(4) == 0 {
				c.Get(key)
				continue
			}
			_ = c.Set(key, make([]byte, 64+rng.IntN(64<<10)))
			ops++
		}
		if time.Now().After(next) {
			h, st := heap(), c.Stats()
			if first == 0 {
				first = h
			}
			peak = max(peak, h)
			t.Logf("t=%5.0fs sets=%9d heapInuse=%6.1f MiB cache=%6.1f MiB entries=%6d evictions=%9d pressure=%s",
				time.Since(start).Seconds(), ops, float64(h)/(1<<20), float64(st.CurrentSizeBytes)/(1<<20), st.EntryCount, st.EvictionCount, st.PressureLevel)
			next = next.Add(d / 10)
		}
	}
	t.Logf("first sample %.1f MiB, peak %.1f MiB, growth %.1f MiB over %v", float64(first)/(1<<20), float64(peak)/(1<<20), float64(peak-first)/(1<<20), d)
	if st := c.Stats(); st.CurrentSizeBytes > cfg.MaxSizeBytes {
		t.Fatalf("cache holds %d bytes, over its bound %d", st.CurrentSizeBytes, cfg.MaxSizeBytes)
	}
	if growth := int64(peak) - int64(first); growth > 100<<20 {
		t.Errorf("heap grew by %d MiB; the PRD's bound is 100 MB per hour", growth>>20)
	}
}

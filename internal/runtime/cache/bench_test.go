package cache

import (
	"strconv"
	"sync/atomic"
	"testing"
)

// Benchmarks: go test -bench . -benchmem ./internal/runtime/cache/
// Numbers go in BENCHMARKS.md, never in assertions.

const benchKeys = 1 << 16 // a power of two, for masking

func benchKeyset() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "tenant/memory/" + strconv.Itoa(i)
	}
	return keys
}

// benchCache is a default-config cache holding entries keys[:n] with
// 256-byte values.
func benchCache(b *testing.B, policy string, maxEntries, n int, keys []string) *Cache[string, []byte] {
	b.Helper()
	cfg := DefaultConfig()
	cfg.EvictionPolicy = policy
	cfg.MaxEntries = maxEntries
	c, err := New[string, []byte](cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	val := make([]byte, 256)
	for _, k := range keys[:n] {
		if err := c.Set(k, val); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

// worker gives each RunParallel goroutine its own starting key.
func worker(seq *atomic.Uint64) int { return int(seq.Add(1) * 7919) }

// BenchmarkGet: hits on a cache of 10,000 entries, every goroutine at once.
func BenchmarkGet(b *testing.B) {
	keys := benchKeyset()
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		b.Run(pol, func(b *testing.B) {
			const n = 10_000
			c := benchCache(b, pol, n, n, keys)
			var seq atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := worker(&seq)
				for pb.Next() {
					if _, ok := c.Get(keys[i%n]); !ok {
						b.Error("miss")
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkSet: replacing present keys in a cache with room (no eviction).
func BenchmarkSet(b *testing.B) {
	keys := benchKeyset()
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		b.Run(pol, func(b *testing.B) {
			const n = 10_000
			c := benchCache(b, pol, 2*n, n, keys)
			val := make([]byte, 256)
			var seq atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := worker(&seq)
				for pb.Next() {
					_ = c.Set(keys[i%n], val)
					i++
				}
			})
		})
	}
}

// BenchmarkSetEvicting: new keys into a full cache (1,024 entries), so
// every Set evicts one entry.
func BenchmarkSetEvicting(b *testing.B) {
	keys := benchKeyset()
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		b.Run(pol, func(b *testing.B) {
			const n = 1024
			c := benchCache(b, pol, n, n, keys)
			val := make([]byte, 256)
			var seq atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := worker(&seq)
				for pb.Next() {
					_ = c.Set(keys[i&(benchKeys-1)], val)
					i++
				}
			})
			b.StopTimer()
			if s := c.Stats(); s.EvictionCount == 0 || s.EntryCount > n {
				b.Fatalf("no eviction or bound broken: %+v", s)
			}
		})
	}
}

// BenchmarkSetDefaultSizerStruct: the reflection path of the default
// sizer, for a small document value.
func BenchmarkSetDefaultSizerStruct(b *testing.B) {
	type doc struct {
		ID   string
		Tags []string
		Meta map[string]string
	}
	cfg := DefaultConfig()
	c, err := New[int, *doc](cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	d := &doc{ID: "abc", Tags: []string{"x", "y"}, Meta: map[string]string{"k": "v"}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = c.Set(i&1023, d)
	}
}

package tiered

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

const benchKeys = 1024

// benchStore returns a replica holding benchKeys entries of a 200-byte
// value, read once so that they are cached.
func benchStore(b *testing.B, addr string) *Store {
	b.Helper()
	backend := newBackend()
	s := newReplica(b, backend, addr)
	if addr != "" {
		live(b, s)
	}
	value := `"` + strings.Repeat("x", 198) + `"`
	for i := range benchKeys {
		put(b, backend, "acme", "bench", fmt.Sprint("key-", i), value, 0)
		get(b, s, "acme", "bench", fmt.Sprint("key-", i))
	}
	return s
}

func benchKeyNames() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	return keys
}

// BenchmarkLookupMemoryL1 is the hot path: a tier-1 hit, from every
// processor at once.
func BenchmarkLookupMemoryL1(b *testing.B) {
	s := benchStore(b, "")
	keys := benchKeyNames()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, cached, err := s.LookupMemory(ctx, "acme", "bench", keys[i%benchKeys])
			if err != nil || !cached {
				b.Fatalf("cached %v, err %v", cached, err)
			}
			i++
		}
	})
}

// BenchmarkGetMemoryL1 is the same hit through store.Store's GetMemory,
// which adds the deep copy the store contract requires.
func BenchmarkGetMemoryL1(b *testing.B) {
	s := benchStore(b, "")
	keys := benchKeyNames()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.GetMemory(ctx, "acme", "bench", keys[i%benchKeys]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkLookupMemoryL2 is a tier-1 miss answered by Redis (a private
// redis-server on loopback): each iteration first drops the key from tier
// 1, which costs well under a microsecond of the total.
func BenchmarkLookupMemoryL2(b *testing.B) {
	s := benchStore(b, redistest.Start(b).Addr())
	keys := benchKeyNames()
	ctx := context.Background()
	hits := s.Stats().RedisHits
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%benchKeys]
		s.l1.invalidate(memKey("acme", "bench", k))
		if _, cached, err := s.LookupMemory(ctx, "acme", "bench", k); err != nil || !cached {
			b.Fatalf("cached %v, err %v", cached, err)
		}
	}
	b.StopTimer()
	if got := s.Stats().RedisHits - hits; got != uint64(b.N) {
		b.Fatalf("%d Redis hits for %d lookups", got, b.N)
	}
}

package pgstore

import (
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/storetest"
)

// TestContract runs the suite both stores must pass. It shares one
// database between its subtests, which keep to tenants of their own.
func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		return openStoreWith(t, store.Options{Clock: clock})
	})
}

// BenchmarkContract runs the benchmarks both stores share, so their
// numbers compare directly.
func BenchmarkContract(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL; skipped with -short")
	}
	storetest.RunBenchmarks(b, func(b testing.TB) store.Store { return openStore(b) })
}

package memstore_test

import (
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		s := memstore.New(store.Options{Clock: clock})
		t.Cleanup(s.Close)
		return s
	})
}

func BenchmarkContract(b *testing.B) {
	storetest.RunBenchmarks(b, func(b testing.TB) store.Store {
		s := memstore.New(store.Options{})
		b.Cleanup(s.Close)
		return s
	})
}

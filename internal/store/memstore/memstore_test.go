package memstore_test

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memstore.New(store.Options{})
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

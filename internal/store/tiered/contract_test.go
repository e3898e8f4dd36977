package tiered

import (
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/storetest"
)

// The decorator must be invisible: the contract suite passes through it,
// with and without Redis, as it does on the bare stores.
func TestContract(t *testing.T) {
	t.Run("no redis", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
			return newReplica(t, newBackendAt(clock), "", withClock(clock))
		})
	})
	t.Run("redis", func(t *testing.T) {
		r := redistest.Start(t)
		storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
			s := newReplica(t, newBackendAt(clock), r.Addr(), withClock(clock))
			live(t, s)
			return s
		})
	})
}

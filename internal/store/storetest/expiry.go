package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// expiryTTL is how long the expiring entries live. It is far shorter
// than any other TTL in the suite, because the suite's clock is
// advanced by as much for every subtest at once.
const expiryTTL = time.Second

// testMemoryExpiry checks that an expired entry is absent for every
// purpose. It is the only subtest that moves the clock on, and the only
// one that calls PurgeExpiredMemory, so the purge count it sees includes
// its own entries.
func testMemoryExpiry(t *testing.T, h *harness) {
	tn := h.tenant()
	expiring := func(key, value string, tags ...string) store.MemoryEntry {
		t.Helper()
		return must(h.s.PutMemory(ctx(t), tn, store.PutMemory{
			Namespace: "ns", Key: key, Value: json.RawMessage(value), Tags: tags, TTL: expiryTTL,
		}))(t)
	}
	keysBefore := []string{"for-delete", "for-ifversion", "for-purge", "for-put"}
	var last store.MemoryEntry
	for _, k := range keysBefore {
		last = expiring(k, `"mango"`, "fruit")
		expiring(k, `"mango"`, "fruit") // version 2, so a put over it visibly restarts at 1
	}
	keep := put(t, h, tn, "ns", "lasting", `"mango"`, "fruit")

	// Before expiry every read sees the entries.
	got := must(h.s.GetMemory(ctx(t), tn, "ns", "for-put"))(t)
	if got.ExpiresAt == nil || got.Version != 2 {
		t.Fatalf("before expiry: got %+v, want version 2 with an expiresAt", got)
	}
	page := must(h.s.ListMemory(ctx(t), tn, store.ListMemory{}))(t)
	equal(t, "list before expiry", keys(page.Items), append(slices.Clone(keysBefore), "lasting"))
	hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "mango"}))(t)
	equal(t, "search hits before expiry", len(hits), 5)
	recent := must(h.s.RecentMemory(ctx(t), tn, nil, 0))(t)
	equal(t, "recent before expiry", len(recent), 5)

	// Every entry expires at most expiryTTL after it was written, and
	// the clock has moved on since: after expiryTTL more, all are dead.
	h.clock.Advance(expiryTTL)

	t.Run("get does not find an expired entry", func(t *testing.T) {
		_, err := h.s.GetMemory(ctx(t), tn, "ns", "for-put")
		wantIs(t, err, store.ErrNotFound)
	})
	t.Run("list, search and recent skip expired entries", func(t *testing.T) {
		page := must(h.s.ListMemory(ctx(t), tn, store.ListMemory{}))(t)
		equal(t, "list", keys(page.Items), []string{"lasting"})
		hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "mango", Tags: []string{"fruit"}}))(t)
		if len(hits) != 1 || hits[0].Entry.Key != keep.Key {
			t.Fatalf("search after expiry returned %d hits, want only %q", len(hits), keep.Key)
		}
		recent := must(h.s.RecentMemory(ctx(t), tn, nil, 0))(t)
		equal(t, "recent", keys(recent), []string{"lasting"})
	})
	t.Run("delete of an expired entry is not found", func(t *testing.T) {
		wantIs(t, h.s.DeleteMemory(ctx(t), tn, "ns", "for-delete"), store.ErrNotFound)
	})
	t.Run("bulk delete skips expired entries", func(t *testing.T) {
		removed := must(h.s.BulkDeleteMemory(ctx(t), tn, "ns", []string{"for-delete"}, ""))(t)
		equal(t, "removed", len(removed), 0)
	})
	t.Run("a put over an expired entry starts again at version 1", func(t *testing.T) {
		got := put(t, h, tn, "ns", "for-put", `"new"`)
		equal(t, "version", got.Version, int64(1))
		if got.ExpiresAt != nil {
			t.Fatalf("expiresAt %v survived a put without TTL", got.ExpiresAt)
		}
		if !got.CreatedAt.After(last.CreatedAt) {
			t.Fatalf("createdAt %v is that of the expired entry", got.CreatedAt)
		}
	})
	t.Run("ifVersion 0 succeeds over an expired entry", func(t *testing.T) {
		got := must(h.s.PutMemory(ctx(t), tn, store.PutMemory{
			Namespace: "ns", Key: "for-ifversion", Value: json.RawMessage(`"new"`), IfVersion: ptr(int64(0)),
		}))(t)
		equal(t, "version", got.Version, int64(1))
	})
	t.Run("ifVersion of the expired entry conflicts", func(t *testing.T) {
		_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{
			Namespace: "ns", Key: "for-purge", Value: json.RawMessage(`"new"`), IfVersion: ptr(int64(2)),
		})
		wantIs(t, err, store.ErrConflict)
	})
	t.Run("purge removes expired entries and counts them", func(t *testing.T) {
		n := must(h.s.PurgeExpiredMemory(ctx(t)))(t)
		if n < 1 { // for-purge at least; for-delete may be gone already
			t.Fatalf("purge reported %d entries, want at least 1", n)
		}
		page := must(h.s.ListMemory(ctx(t), tn, store.ListMemory{}))(t)
		equal(t, "list after purge", keys(page.Items), []string{"for-ifversion", "for-put", "lasting"})
	})
}

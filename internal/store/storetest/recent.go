package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

func testMemoryRecent(t *testing.T, h *harness) {
	t.Run("most recently updated first, paged strictly after a position", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for i := range 7 {
			put(t, h, tn, fmt.Sprintf("ns%d", i%2), fmt.Sprintf("k%d", i), `1`)
		}
		touched := put(t, h, tn, "ns0", "k0", `2`) // the oldest becomes the newest
		all := must(h.s.RecentMemory(ctx(t), tn, nil, 0))(t)
		equal(t, "count", len(all), 7)
		if all[0].Key != touched.Key {
			t.Fatalf("first is %q, want the entry just updated", all[0].Key)
		}
		pos := func(e store.MemoryEntry) store.Pos {
			return store.Pos{UpdatedAt: e.UpdatedAt, ID: store.MemoryID(e.Namespace, e.Key)}
		}
		checkRecentOrder(t, all, pos)

		walked := walkRecent(t, h.s.RecentMemory, tn, 3, pos)
		equal(t, "paged walk", namespaced(walked), namespaced(all))
	})
}

// walkRecent pages through a recent listing, limit items at a time, each
// page strictly after the last item of the one before; it fails the test
// if the listing does not end.
func walkRecent[T any](t testing.TB, list func(context.Context, string, *store.Pos, int) ([]T, error),
	tenant string, limit int, pos func(T) store.Pos) []T {
	t.Helper()
	var all []T
	var after *store.Pos
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("the recent listing did not end after 100 pages")
		}
		page := must(list(ctx(t), tenant, after, limit))(t)
		if len(page) > limit {
			t.Fatalf("a page of limit %d has %d items", limit, len(page))
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = ptr(pos(page[len(page)-1]))
	}
}

// checkRecentOrder fails the test unless items are in strictly
// descending (UpdatedAt, ID) order.
func checkRecentOrder[T any](t testing.TB, items []T, pos func(T) store.Pos) {
	t.Helper()
	for i := 1; i < len(items); i++ {
		a, b := pos(items[i-1]), pos(items[i])
		if a.UpdatedAt.Before(b.UpdatedAt) || (a.UpdatedAt.Equal(b.UpdatedAt) && a.ID <= b.ID) {
			t.Fatalf("item %d (%v, %q) is not before item %d (%v, %q)", i-1, a.UpdatedAt, a.ID, i, b.UpdatedAt, b.ID)
		}
	}
}

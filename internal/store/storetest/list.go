package storetest

import (
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// walkPages follows a keyset-paginated listing to its end and returns
// every item in order. list fetches the page at a cursor ("" for the
// first); between, if not nil, runs after each page but the last.
func walkPages[T any](t testing.TB, limit int, list func(cursor string) (store.Page[T], error), between func(page int)) []T {
	t.Helper()
	var all []T
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("the listing did not end after 100 pages")
		}
		page := must(list(cursor))(t)
		if page.Items == nil {
			t.Fatal("a page has nil items, want an empty slice")
		}
		if limit > 0 && len(page.Items) > limit {
			t.Fatalf("a page of limit %d has %d items", limit, len(page.Items))
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		if len(page.Items) == 0 {
			t.Fatal("an empty page has a next cursor")
		}
		if between != nil {
			between(i)
		}
		cursor = page.NextCursor
	}
}

// walk lists every memory entry q selects.
func walk(t testing.TB, h *harness, tenant string, q store.ListMemory, between func(page int)) []store.MemoryEntry {
	t.Helper()
	return walkPages(t, q.Limit, func(c string) (store.Page[store.MemoryEntry], error) {
		q.Cursor = c
		return h.s.ListMemory(ctx(t), tenant, q)
	}, between)
}

// namespaced returns "namespace/key" for each entry.
func namespaced(entries []store.MemoryEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Namespace + "/" + e.Key
	}
	return out
}

func testMemoryList(t *testing.T, h *harness) {
	t.Run("entries come in namespace then key order, bytewise", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		// Upper case sorts before lower case and '-' before digits in
		// byte order, unlike in most locales' collations.
		for _, nk := range [][2]string{{"b", "x"}, {"a", "b"}, {"a", "B"}, {"B", "z"}, {"a", "a-1"}, {"a", "a1"}, {"a", "a"}} {
			put(t, h, tn, nk[0], nk[1], `1`)
		}
		all := walk(t, h, tn, store.ListMemory{}, nil)
		equal(t, "order", namespaced(all), []string{"B/z", "a/B", "a/a", "a/a-1", "a/a1", "a/b", "b/x"})
		one := walk(t, h, tn, store.ListMemory{Namespace: "a", Limit: 2}, nil)
		equal(t, "one namespace, paged", namespaced(one), []string{"a/B", "a/a", "a/a-1", "a/a1", "a/b"})
	})

	t.Run("prefix selects keys literally", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for _, k := range []string{"a_b", "axb", "a%c", "a%", "abc", "a\\b", "b_a", "A_b"} {
			put(t, h, tn, "ns", k, `1`)
			put(t, h, tn, "other", k, `1`)
		}
		cases := []struct {
			prefix string
			want   []string
		}{
			{"a_", []string{"a_b"}},
			{"a%", []string{"a%", "a%c"}},
			{"a\\", []string{"a\\b"}},
			{"ab", []string{"abc"}},
			{"zz", nil},
		}
		for _, c := range cases {
			got := walk(t, h, tn, store.ListMemory{Namespace: "ns", Prefix: c.prefix}, nil)
			equal(t, fmt.Sprintf("prefix %q", c.prefix), keys(got), append([]string{}, c.want...))
		}
		got := walk(t, h, tn, store.ListMemory{Prefix: "a_"}, nil)
		equal(t, "prefix across namespaces", namespaced(got), []string{"ns/a_b", "other/a_b"})
	})

	t.Run("tags filter requires every tag", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "both", `1`, "red", "round")
		put(t, h, tn, "ns", "red", `1`, "red")
		put(t, h, tn, "ns", "round", `1`, "round", "big")
		put(t, h, tn, "ns", "none", `1`)
		equal(t, "red", keys(walk(t, h, tn, store.ListMemory{Tags: []string{"red"}}, nil)), []string{"both", "red"})
		equal(t, "red+round", keys(walk(t, h, tn, store.ListMemory{Tags: []string{"round", "red", "red"}}, nil)), []string{"both"})
		equal(t, "unknown", len(walk(t, h, tn, store.ListMemory{Tags: []string{"red", "blue"}}, nil)), 0)
	})

	t.Run("an empty tenant lists nothing", func(t *testing.T) {
		t.Parallel()
		page := must(h.s.ListMemory(ctx(t), h.tenant(), store.ListMemory{}))(t)
		if len(page.Items) != 0 || page.NextCursor != "" {
			t.Fatalf("got %d items and cursor %q", len(page.Items), page.NextCursor)
		}
		if page.Items == nil {
			t.Fatal("items is nil, want an empty slice")
		}
	})

	t.Run("the default page size applies", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for i := range store.DefListLimit + 2 {
			put(t, h, tn, "ns", fmt.Sprintf("k%03d", i), `1`)
		}
		page := must(h.s.ListMemory(ctx(t), tn, store.ListMemory{}))(t)
		if len(page.Items) != store.DefListLimit || page.NextCursor == "" {
			t.Fatalf("got %d items and cursor %q, want %d and a cursor", len(page.Items), page.NextCursor, store.DefListLimit)
		}
		page = must(h.s.ListMemory(ctx(t), tn, store.ListMemory{Cursor: page.NextCursor}))(t)
		equal(t, "last page", keys(page.Items), []string{fmt.Sprintf("k%03d", store.DefListLimit), fmt.Sprintf("k%03d", store.DefListLimit+1)})
		equal(t, "last cursor", page.NextCursor, "")
	})

	t.Run("a full last page has no next cursor", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for i := range 6 {
			put(t, h, tn, "ns", fmt.Sprintf("k%d", i), `1`)
		}
		first := must(h.s.ListMemory(ctx(t), tn, store.ListMemory{Limit: 3}))(t)
		second := must(h.s.ListMemory(ctx(t), tn, store.ListMemory{Limit: 3, Cursor: first.NextCursor}))(t)
		equal(t, "second page", keys(second.Items), []string{"k3", "k4", "k5"})
		equal(t, "cursor after the last page", second.NextCursor, "")
	})

	t.Run("pages walk every entry once while entries come and go", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for i := 0; i < 20; i += 2 {
			put(t, h, tn, "ns", fmt.Sprintf("k%02d", i), `1`)
		}
		got := walk(t, h, tn, store.ListMemory{Namespace: "ns", Limit: 3}, func(page int) {
			if page != 0 {
				return
			}
			// After k00, k02, k04: one insert behind the cursor, one
			// ahead of it, and a delete ahead of it.
			put(t, h, tn, "ns", "k01", `1`)
			put(t, h, tn, "ns", "k19", `1`)
			noErr(t, h.s.DeleteMemory(ctx(t), tn, "ns", "k10"))
			put(t, h, tn, "ns", "k04", `2`) // an update of a listed entry does not repeat it
		})
		equal(t, "walk", keys(got), []string{"k00", "k02", "k04", "k06", "k08", "k12", "k14", "k16", "k18", "k19"})
	})

	t.Run("a cursor that is not a memory list cursor is rejected", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for range 2 {
			must(h.s.CreateSession(ctx(t), tn, store.NewSession{Task: "t", Initiator: "a"}))(t)
		}
		sessions := must(h.s.ListSessions(ctx(t), tn, store.ListSessions{Limit: 1}))(t)
		if sessions.NextCursor == "" {
			t.Fatal("listing one of two sessions returned no cursor")
		}
		for _, c := range []string{"garbage!", "e30", sessions.NextCursor} {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Cursor: c})
			wantField(t, err, "cursor")
		}
	})
}

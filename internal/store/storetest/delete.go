package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

func testMemoryDelete(t *testing.T, h *harness) {
	t.Run("delete removes the entry", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "k", `1`)
		put(t, h, tn, "ns", "other", `1`)
		noErr(t, h.s.DeleteMemory(ctx(t), tn, "ns", "k"))
		_, err := h.s.GetMemory(ctx(t), tn, "ns", "k")
		wantIs(t, err, store.ErrNotFound)
		must(h.s.GetMemory(ctx(t), tn, "ns", "other"))(t)
		wantIs(t, h.s.DeleteMemory(ctx(t), tn, "ns", "k"), store.ErrNotFound)
		// A write after a delete starts a new entry.
		equal(t, "version after delete", put(t, h, tn, "ns", "k", `2`).Version, int64(1))
	})

	t.Run("delete of a missing entry is not found", func(t *testing.T) {
		t.Parallel()
		wantIs(t, h.s.DeleteMemory(ctx(t), h.tenant(), "ns", "missing"), store.ErrNotFound)
	})

	t.Run("bulk delete by keys skips missing keys", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for _, k := range []string{"a", "b", "c"} {
			put(t, h, tn, "ns", k, `1`)
			put(t, h, tn, "other", k, `1`)
		}
		removed := must(h.s.BulkDeleteMemory(ctx(t), tn, "ns", []string{"c", "missing", "a", "a"}, ""))(t)
		equal(t, "removed", sortedCopy(removed), []string{"a", "c"})
		equal(t, "left", namespaced(walk(t, h, tn, store.ListMemory{}, nil)), []string{"ns/b", "other/a", "other/b", "other/c"})
		removed = must(h.s.BulkDeleteMemory(ctx(t), tn, "ns", []string{"missing"}, ""))(t)
		if removed == nil || len(removed) != 0 {
			t.Fatalf("removing nothing returned %#v, want an empty non-nil slice", removed)
		}
	})

	t.Run("bulk delete by prefix", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for _, k := range []string{"tmp/1", "tmp/2", "tmpx", "keep", "t_p/1", "txp/1"} {
			put(t, h, tn, "ns", k, `1`)
		}
		put(t, h, tn, "other", "tmp/3", `1`)
		removed := must(h.s.BulkDeleteMemory(ctx(t), tn, "ns", nil, "tmp/"))(t)
		equal(t, "removed", sortedCopy(removed), []string{"tmp/1", "tmp/2"})
		removed = must(h.s.BulkDeleteMemory(ctx(t), tn, "ns", nil, "t_p"))(t)
		equal(t, "removed with a LIKE wildcard in the prefix", removed, []string{"t_p/1"})
		equal(t, "left", namespaced(walk(t, h, tn, store.ListMemory{}, nil)), []string{"ns/keep", "ns/tmpx", "ns/txp/1", "other/tmp/3"})
	})

	t.Run("bulk delete needs exactly one of keys and prefix", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "k", `1`)
		tooMany := make([]string, store.MaxBulkKeys+1)
		for i := range tooMany {
			tooMany[i] = fmt.Sprintf("k%d", i)
		}
		cases := []struct {
			name   string
			keys   []string
			prefix string
			field  string
		}{
			{"neither", nil, "", ""},
			{"both", []string{"k"}, "k", ""},
			{"an empty list of keys", []string{}, "", ""},
			{"too many keys", tooMany, "", "keys"},
			{"an empty key", []string{"k", ""}, "", ""},
			{"a prefix with a control character", nil, "k\n", "prefix"},
		}
		for _, c := range cases {
			_, err := h.s.BulkDeleteMemory(ctx(t), tn, "ns", c.keys, c.prefix)
			if c.field == "" { // which field is the implementation's choice
				var fe *store.FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("%s: got %v, want a *store.FieldError", c.name, err)
				}
				continue
			}
			wantField(t, err, c.field)
		}
		_, err := h.s.BulkDeleteMemory(ctx(t), tn, "", []string{"k"}, "")
		wantField(t, err, "namespace")
		must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
	})
}

package storetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// put writes an unconditional entry without tags or TTL.
func put(t testing.TB, h *harness, tenant, ns, key, value string, tags ...string) store.MemoryEntry {
	t.Helper()
	return must(h.s.PutMemory(ctx(t), tenant, store.PutMemory{
		Namespace: ns, Key: key, Value: json.RawMessage(value), Tags: tags,
	}))(t)
}

func testMemory(t *testing.T, h *harness) {
	t.Run("put then get returns the same entry", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		value := `{"b": [1, 2.5, "x"], "a": {"nested": true}, "s": "héllo"}`
		before := h.clock.Now()
		got := must(h.s.PutMemory(ctx(t), tn, store.PutMemory{
			Namespace: "notes", Key: "k1", Value: json.RawMessage(value), Tags: []string{"zeta", "alpha", "zeta"},
		}))(t)
		equal(t, "namespace", got.Namespace, "notes")
		equal(t, "key", got.Key, "k1")
		jsonEqual(t, got.Value, json.RawMessage(value))
		equal(t, "tags", got.Tags, []string{"alpha", "zeta"})
		equal(t, "version", got.Version, int64(1))
		if got.CreatedAt.Before(before) || !got.UpdatedAt.Equal(got.CreatedAt) {
			t.Fatalf("createdAt %v / updatedAt %v: want both equal and not before %v", got.CreatedAt, got.UpdatedAt, before)
		}
		if got.CreatedAt.Location() != time.UTC {
			t.Fatalf("createdAt %v is not in UTC", got.CreatedAt)
		}
		if got.ExpiresAt != nil {
			t.Fatalf("an entry without TTL has expiresAt %v", got.ExpiresAt)
		}
		again := must(h.s.GetMemory(ctx(t), tn, "notes", "k1"))(t)
		jsonEqual(t, again.Value, got.Value)
		again.Value = got.Value // compared by meaning above
		equal(t, "get after put", again, got)
	})

	t.Run("tags are never nil", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		got := put(t, h, tn, "ns", "k", `"v"`)
		if got.Tags == nil || len(got.Tags) != 0 {
			t.Fatalf("put without tags returned tags %#v, want an empty non-nil slice", got.Tags)
		}
		got = must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
		if got.Tags == nil {
			t.Fatal("get of an entry without tags returned nil tags")
		}
	})

	t.Run("every write bumps the version and keeps createdAt", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		first := put(t, h, tn, "ns", "k", `1`, "old")
		second := put(t, h, tn, "ns", "k", `2`)
		third := put(t, h, tn, "ns", "k", `3`, "new")
		equal(t, "versions", []int64{first.Version, second.Version, third.Version}, []int64{1, 2, 3})
		equal(t, "createdAt", third.CreatedAt, first.CreatedAt)
		if third.UpdatedAt.Before(first.UpdatedAt) {
			t.Fatalf("updatedAt went back: %v after %v", third.UpdatedAt, first.UpdatedAt)
		}
		equal(t, "tags replaced", second.Tags, []string{})
		got := must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
		jsonEqual(t, got.Value, json.RawMessage(`3`))
		equal(t, "tags", got.Tags, []string{"new"})
	})

	t.Run("ifVersion", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		cases := []struct {
			name      string
			existing  bool
			ifVersion int64
			want      error
		}{
			{"0 on an absent entry creates it", false, 0, nil},
			{"0 on a present entry conflicts", true, 0, store.ErrConflict},
			{"a matching version writes", true, 1, nil},
			{"a stale version conflicts", true, 7, store.ErrConflict},
			{"n on an absent entry conflicts", false, 1, store.ErrConflict},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				key := strings.ReplaceAll(c.name, " ", "-")
				if c.existing {
					put(t, h, tn, "ns", key, `"before"`)
				}
				got, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{
					Namespace: "ns", Key: key, Value: json.RawMessage(`"after"`), IfVersion: ptr(c.ifVersion),
				})
				if c.want != nil {
					wantIs(t, err, c.want)
					cur, gerr := h.s.GetMemory(ctx(t), tn, "ns", key)
					if !c.existing {
						wantIs(t, gerr, store.ErrNotFound)
						return
					}
					noErr(t, gerr)
					jsonEqual(t, cur.Value, json.RawMessage(`"before"`))
					equal(t, "version after a conflict", cur.Version, int64(1))
					return
				}
				noErr(t, err)
				want := int64(1)
				if c.existing {
					want = 2
				}
				equal(t, "version", got.Version, want)
				jsonEqual(t, got.Value, json.RawMessage(`"after"`))
			})
		}
	})

	t.Run("get of a missing entry is not found", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "present", `1`)
		for _, c := range []struct{ ns, key string }{{"ns", "absent"}, {"other", "present"}} {
			_, err := h.s.GetMemory(ctx(t), tn, c.ns, c.key)
			wantIs(t, err, store.ErrNotFound)
		}
	})

	t.Run("returned entries are copies", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		in := store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`{"a":"b"}`), Tags: []string{"x", "y"}}
		got := must(h.s.PutMemory(ctx(t), tn, in))(t)
		in.Value[2] = 'z'
		in.Tags[0] = "mutated"
		got.Value[2] = 'z'
		got.Tags[0] = "mutated"
		again := must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
		again.Tags[1] = "mutated"
		again.Value[2] = 'z'
		final := must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
		jsonEqual(t, final.Value, json.RawMessage(`{"a":"b"}`))
		equal(t, "tags", final.Tags, []string{"x", "y"})
	})

	t.Run("a TTL sets expiresAt and a later put without TTL clears it", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		got := must(h.s.PutMemory(ctx(t), tn, store.PutMemory{
			Namespace: "ns", Key: "k", Value: json.RawMessage(`1`), TTL: time.Hour,
		}))(t)
		if got.ExpiresAt == nil {
			t.Fatal("an entry with a TTL has no expiresAt")
		}
		if d := got.ExpiresAt.Sub(got.UpdatedAt); d < time.Hour-time.Second || d > time.Hour+time.Second {
			t.Fatalf("expiresAt is %v after updatedAt, want about an hour", d)
		}
		got = put(t, h, tn, "ns", "k", `2`)
		if got.ExpiresAt != nil {
			t.Fatalf("a put without TTL kept expiresAt %v", got.ExpiresAt)
		}
		got = must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
		if got.ExpiresAt != nil {
			t.Fatalf("get after a put without TTL shows expiresAt %v", got.ExpiresAt)
		}
	})
}

func testMemoryValidation(t *testing.T, h *harness) {
	tn := h.tenant()
	long := func(n int) string { return strings.Repeat("a", n) }
	tooManyTags := make([]string, store.MaxTags+1)
	for i := range tooManyTags {
		tooManyTags[i] = "t" + strings.Repeat("x", i)
	}
	huge := `"` + strings.Repeat("x", store.DefaultMaxValue) + `"`
	ok := store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`{"a":1}`)}
	with := func(f func(p *store.PutMemory)) store.PutMemory {
		p := ok
		f(&p)
		return p
	}
	cases := []struct {
		name  string
		in    store.PutMemory
		field string
	}{
		{"empty namespace", with(func(p *store.PutMemory) { p.Namespace = "" }), "namespace"},
		{"over-long namespace", with(func(p *store.PutMemory) { p.Namespace = long(store.MaxNamespaceLen + 1) }), "namespace"},
		{"namespace with a control character", with(func(p *store.PutMemory) { p.Namespace = "a\nb" }), "namespace"},
		{"namespace that is not UTF-8", with(func(p *store.PutMemory) { p.Namespace = "a\xffb" }), "namespace"},
		{"empty key", with(func(p *store.PutMemory) { p.Key = "" }), "key"},
		{"over-long key", with(func(p *store.PutMemory) { p.Key = long(store.MaxKeyLen + 1) }), "key"},
		{"key with a control character", with(func(p *store.PutMemory) { p.Key = "a\x00b" }), "key"},
		{"missing value", with(func(p *store.PutMemory) { p.Value = nil }), "value"},
		{"blank value", with(func(p *store.PutMemory) { p.Value = json.RawMessage("  ") }), "value"},
		{"invalid JSON value", with(func(p *store.PutMemory) { p.Value = json.RawMessage(`{"a":`) }), "value"},
		{"oversized value", with(func(p *store.PutMemory) { p.Value = json.RawMessage(huge) }), "value"},
		{"value with a NUL", with(func(p *store.PutMemory) { p.Value = json.RawMessage(`"a\u0000b"`) }), "/value"},
		{"too many tags", with(func(p *store.PutMemory) { p.Tags = tooManyTags }), "tags"},
		{"empty tag", with(func(p *store.PutMemory) { p.Tags = []string{""} }), "tags[0]"},
		{"tag with a control character", with(func(p *store.PutMemory) { p.Tags = []string{"ok", "b\tad"} }), "tags[1]"},
		{"over-long tag", with(func(p *store.PutMemory) { p.Tags = []string{long(store.MaxTagLen + 1)} }), "tags[0]"},
	}
	t.Run("put", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name+" is rejected", func(t *testing.T) {
				t.Parallel()
				_, err := h.s.PutMemory(ctx(t), tn, c.in)
				wantField(t, err, c.field)
			})
		}
	})
	// Every case differs from a valid put of ns/k in one field, so a
	// rejected put that wrote anything anyway shows up here.
	_, err := h.s.GetMemory(ctx(t), tn, "ns", "k")
	wantIs(t, err, store.ErrNotFound)

	readCases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"get with an empty namespace", func() error { _, err := h.s.GetMemory(ctx(t), tn, "", "k"); return err }, "namespace"},
		{"get with an empty key", func() error { _, err := h.s.GetMemory(ctx(t), tn, "ns", ""); return err }, "key"},
		{"delete with a control character in the key", func() error { return h.s.DeleteMemory(ctx(t), tn, "ns", "a\x01") }, "key"},
		{"list with a list limit over the maximum", func() error {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Limit: store.MaxListLimit + 1})
			return err
		}, "limit"},
		{"list with a negative limit", func() error {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Limit: -1})
			return err
		}, "limit"},
		{"list with a bad namespace", func() error {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Namespace: "a\nb"})
			return err
		}, "namespace"},
		{"list with a control character in the prefix", func() error {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Prefix: "a\x01"})
			return err
		}, "prefix"},
		{"list with an agents cursor", func() error {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Cursor: store.EncodeCursor("agents", time.Time{}, "a", "")})
			return err
		}, "cursor"},
		{"list with a bad tag", func() error {
			_, err := h.s.ListMemory(ctx(t), tn, store.ListMemory{Tags: []string{""}})
			return err
		}, "tags[0]"},
		{"recent with a limit over the maximum", func() error {
			_, err := h.s.RecentMemory(ctx(t), tn, nil, store.MaxListLimit+1)
			return err
		}, "limit"},
	}
	for _, c := range readCases {
		t.Run(c.name+" is rejected", func(t *testing.T) {
			t.Parallel()
			wantField(t, c.call(), c.field)
		})
	}
}

// keys returns the keys of entries, in order.
func keys(entries []store.MemoryEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Key
	}
	return out
}

// sortedCopy returns s sorted, leaving s alone.
func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

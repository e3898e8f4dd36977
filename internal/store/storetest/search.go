package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// hitKeys returns the keys of hits, in rank order.
func hitKeys(hits []store.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Entry.Key
	}
	return out
}

// The words are plain English nouns that PostgreSQL's english stemmer
// leaves alone, so that both stores tokenize them the same way.
func testMemorySearch(t *testing.T, h *harness) {
	t.Run("more occurrences rank higher", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "once", `{"text": "banana bread"}`)
		put(t, h, tn, "ns", "thrice", `{"text": "banana banana", "more": ["banana"]}`)
		put(t, h, tn, "ns", "never", `{"text": "bread"}`)
		hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "banana"}))(t)
		equal(t, "order", hitKeys(hits), []string{"thrice", "once"})
		if !(hits[0].Score > hits[1].Score) || hits[1].Score <= 0 {
			t.Fatalf("scores %v and %v: want positive and strictly decreasing", hits[0].Score, hits[1].Score)
		}
		jsonEqual(t, hits[0].Entry.Value, []byte(`{"text": "banana banana", "more": ["banana"]}`))
		equal(t, "hit tags", hits[0].Entry.Tags, []string{})
	})

	t.Run("equal scores go to the most recently updated", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "a", `"kiwi"`)
		put(t, h, tn, "ns", "b", `"kiwi"`)
		put(t, h, tn, "ns", "a", `"kiwi"`)
		hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "kiwi"}))(t)
		if len(hits) != 2 {
			t.Fatalf("got %d hits, want 2", len(hits))
		}
		first, second := hits[0].Entry, hits[1].Entry
		if first.UpdatedAt.Before(second.UpdatedAt) ||
			(first.UpdatedAt.Equal(second.UpdatedAt) && first.Key > second.Key) {
			t.Fatalf("tie order: %q (%v) before %q (%v)", first.Key, first.UpdatedAt, second.Key, second.UpdatedAt)
		}
	})

	t.Run("query syntax", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		// Keys carry no words, so phrases cannot run across fields.
		put(t, h, tn, "ns", "e1", `{"note": "green kiwi"}`)
		put(t, h, tn, "ns", "e2", `{"note": "kiwi green"}`)
		put(t, h, tn, "ns", "e3", `{"note": "ripe mango"}`)
		put(t, h, tn, "ns", "e4", `{"note": "mango with kiwi"}`)
		cases := []struct {
			query string
			want  []string // as a set; sorted
		}{
			{"kiwi", []string{"e1", "e2", "e4"}},
			{"kiwi mango", []string{"e4"}},
			{"kiwi -mango", []string{"e1", "e2"}},
			{`"green kiwi"`, []string{"e1"}},
			{`"kiwi green"`, []string{"e2"}},
			{"ripe or green", []string{"e1", "e2", "e3"}},
			{"KIWI Mango", []string{"e4"}},
			{"papaya", nil},
			{"kiwi papaya", nil},
		}
		for _, c := range cases {
			hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: c.query}))(t)
			equal(t, fmt.Sprintf("query %q", c.query), sortedCopy(hitKeys(hits)), append([]string{}, c.want...))
		}
	})

	t.Run("key, string values and tags are searched, object keys are not", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "plum", `{"note": "nothing"}`)
		put(t, h, tn, "ns", "in-value", `{"deep": {"list": [1, true, "plum"]}}`)
		put(t, h, tn, "ns", "in-tag", `{"note": "nothing"}`, "plum")
		put(t, h, tn, "ns", "object-key", `{"plum": "nothing"}`)
		hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "plum"}))(t)
		equal(t, "hits", sortedCopy(hitKeys(hits)), []string{"in-tag", "in-value", "plum"})
	})

	t.Run("namespace and tags filters", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "a", "k1", `"melon"`, "red", "big")
		put(t, h, tn, "a", "k2", `"melon"`, "red")
		put(t, h, tn, "b", "k3", `"melon"`, "red", "big")
		cases := []struct {
			q    store.SearchMemory
			want []string
		}{
			{store.SearchMemory{Query: "melon"}, []string{"k1", "k2", "k3"}},
			{store.SearchMemory{Query: "melon", Namespace: "a"}, []string{"k1", "k2"}},
			{store.SearchMemory{Query: "melon", Namespace: "c"}, nil},
			{store.SearchMemory{Query: "melon", Tags: []string{"big", "red"}}, []string{"k1", "k3"}},
			{store.SearchMemory{Query: "melon", Namespace: "a", Tags: []string{"big"}}, []string{"k1"}},
			{store.SearchMemory{Query: "melon", Tags: []string{"red", "green"}}, nil},
		}
		for _, c := range cases {
			hits := must(h.s.SearchMemory(ctx(t), tn, c.q))(t)
			equal(t, fmt.Sprintf("%+v", c.q), sortedCopy(hitKeys(hits)), append([]string{}, c.want...))
		}
	})

	t.Run("limit", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for i := range store.DefSearchLimit + 3 {
			put(t, h, tn, "ns", fmt.Sprintf("k%02d", i), `"cherry"`)
		}
		hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "cherry"}))(t)
		equal(t, "default limit", len(hits), store.DefSearchLimit)
		hits = must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "cherry", Limit: 4}))(t)
		equal(t, "limit 4", len(hits), 4)
		hits = must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "cherry", Limit: store.MaxSearchLimit}))(t)
		equal(t, "max limit", len(hits), store.DefSearchLimit+3)
		for _, l := range []int{-1, store.MaxSearchLimit + 1} {
			_, err := h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "cherry", Limit: l})
			wantField(t, err, "limit")
		}
	})

	t.Run("bad input is rejected", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		cases := []struct {
			name  string
			q     store.SearchMemory
			field string
		}{
			{"empty query", store.SearchMemory{}, "query"},
			{"over-long query", store.SearchMemory{Query: strings.Repeat("a ", 501)}, "query"},
			{"query with a NUL", store.SearchMemory{Query: "a\x00b"}, "query"},
			{"bad namespace", store.SearchMemory{Query: "a", Namespace: "a\x01"}, "namespace"},
			{"bad tag", store.SearchMemory{Query: "a", Tags: []string{"ok", ""}}, "tags[1]"},
		}
		for _, c := range cases {
			_, err := h.s.SearchMemory(ctx(t), tn, c.q)
			wantField(t, err, c.field)
		}
	})

	t.Run("punctuation-only query finds nothing", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "k", `"apple"`)
		hits := must(h.s.SearchMemory(ctx(t), tn, store.SearchMemory{Query: "!!! ???"}))(t)
		equal(t, "hits", len(hits), 0)
	})
}

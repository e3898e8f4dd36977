package pgstore

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// The PostgreSQL-specific parts of memory: how the search column
// tokenizes keys and tags, and what conflict messages say. The contract
// suite (contract_test.go) covers the semantics both stores share.

func searchKeys(t *testing.T, s *Store, tenant, query string) []string {
	t.Helper()
	hits := must(s.SearchMemory(t.Context(), tenant, store.SearchMemory{Query: query, Limit: store.MaxSearchLimit}))(t)
	keys := make([]string, len(hits))
	for i, h := range hits {
		keys[i] = h.Entry.Key
	}
	slices.Sort(keys)
	return keys
}

func TestSearchFindsWordsInsidePathLikeKeysAndTags(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := t.Context()
	put := func(key string, tags ...string) {
		must(s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: key, Value: json.RawMessage(`{}`), Tags: tags}))(t)
	}
	put("notes/2024/roadmap.md")
	put("config.database.replicas")
	put("plain", "team:platform", "follow-up")
	put("user_preferences")
	cases := []struct {
		query string
		want  []string
	}{
		{"roadmap", []string{"notes/2024/roadmap.md"}},
		{"notes/2024/roadmap.md", []string{"notes/2024/roadmap.md"}},
		{"replicas", []string{"config.database.replicas"}},
		{"database replicas", []string{"config.database.replicas"}},
		{"platform", []string{"plain"}},
		{"follow-up", []string{"plain"}},
		{"follow", []string{"plain"}},
		{"preferences", []string{"user_preferences"}},
	}
	for _, c := range cases {
		if got := searchKeys(t, s, "t", c.query); !slices.Equal(got, c.want) {
			t.Errorf("search %q: got %q, want %q", c.query, got, c.want)
		}
	}
}

func TestSearchRanksKeyAboveTagsAboveValue(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := t.Context()
	must(s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: "in-value", Value: json.RawMessage(`"walrus"`)}))(t)
	must(s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: "in-tags", Value: json.RawMessage(`1`), Tags: []string{"walrus"}}))(t)
	must(s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: "walrus", Value: json.RawMessage(`1`)}))(t)
	hits := must(s.SearchMemory(ctx, "t", store.SearchMemory{Query: "walrus"}))(t)
	var got []string
	for _, h := range hits {
		got = append(got, h.Entry.Key)
	}
	if want := []string{"walrus", "in-tags", "in-value"}; !slices.Equal(got, want) {
		t.Fatalf("rank order %q, want %q", got, want)
	}
}

func TestSearchOfStopWordsFindsNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	must(s.PutMemory(t.Context(), "t", store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`"the and of"`)}))(t)
	for _, q := range []string{"the", "and of", `"the"`, "-the", "or"} {
		if got := searchKeys(t, s, "t", q); len(got) != 0 {
			t.Errorf("search %q: got %q, want no hits", q, got)
		}
	}
}

func TestConflictMessagesNameTheCurrentVersion(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := t.Context()
	in := store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`1`)}
	must(s.PutMemory(ctx, "t", in))(t)
	must(s.PutMemory(ctx, "t", in))(t)
	for _, c := range []struct {
		ifVersion int64
		want      string
	}{
		{0, "already exists at version 2"},
		{5, "is at version 2, not 5"},
	} {
		in.IfVersion = &c.ifVersion
		_, err := s.PutMemory(ctx, "t", in)
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ifVersion %d: got %v, want a conflict saying %q", c.ifVersion, err, c.want)
		}
	}
}

// Expiry is decided with the Go clock passed in, and an expired row is
// recycled in place by the upsert rather than deleted first.
func TestExpiredRowIsRecycledByUpsert(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC), time.Microsecond)
	s := openStoreWith(t, store.Options{Clock: clock.Now})
	ctx := t.Context()
	first := must(s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`1`), TTL: time.Millisecond}))(t)
	clock.Advance(time.Millisecond)
	var wg sync.WaitGroup
	const writers = 8
	for range writers {
		wg.Go(func() {
			if _, err := s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`2`)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := must(s.GetMemory(ctx, "t", "ns", "k"))(t)
	if got.Version != writers || !got.CreatedAt.After(first.CreatedAt) || got.ExpiresAt != nil {
		t.Fatalf("after %d writes over an expired entry: version %d, createdAt %v (first %v), expiresAt %v",
			writers, got.Version, got.CreatedAt, first.CreatedAt, got.ExpiresAt)
	}
}

func TestValuesComeBackCompact(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	got := must(s.PutMemory(t.Context(), "t", store.PutMemory{Namespace: "ns", Key: "k",
		Value: json.RawMessage(`{ "a" : [1, 2],  "b": {"c": null} }`)}))(t)
	if want := `{"a":[1,2],"b":{"c":null}}`; string(got.Value) != want {
		t.Fatalf("value %s, want %s", got.Value, want)
	}
}

func TestPrefixUpperBound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prefix, want string
		ok           bool
	}{
		{"ab", "ac", true},
		{"a/", "a0", true},
		{"é", "ê", true},
		{"a\uD7FF", "a\uE000", true},
		{"a\U0010FFFF", "b", true},
		{"\U0010FFFF", "", false},
	} {
		got, ok := prefixUpperBound(c.prefix)
		if got != c.want || ok != c.ok {
			t.Errorf("prefixUpperBound(%q) = %q, %v; want %q, %v", c.prefix, got, ok, c.want, c.ok)
		}
		if ok && !(c.prefix < got && !strings.HasPrefix(got, c.prefix)) {
			t.Errorf("prefixUpperBound(%q) = %q is not above every extension", c.prefix, got)
		}
	}
}

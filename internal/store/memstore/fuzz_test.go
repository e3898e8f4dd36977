package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// FuzzSearchQuery: memory_search takes any text a model writes. The
// parser and scorer never panic, a bad query is a *FieldError on "query",
// and a query with no positive term finds nothing.
func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{`banana`, `"ripe banana" -kiwi or mango`, `-"`, `or or`, `"unterminated`, `a-b-c`, "\xff\xfe", `""`} {
		f.Add(s)
	}
	s := New(store.Options{})
	ctx := context.Background()
	for _, v := range []string{`{"note":"a ripe banana and a kiwi"}`, `"mango or kiwi"`, `["-", "\"", "or"]`} {
		if _, err := s.PutMemory(ctx, "t", store.PutMemory{Namespace: "n", Key: "k" + v[:2], Value: json.RawMessage(v), Tags: []string{"fruit"}}); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		hits, err := s.SearchMemory(ctx, "t", store.SearchMemory{Query: text})
		if err != nil {
			var fe *store.FieldError
			if !errors.As(err, &fe) || fe.Field != "query" {
				t.Fatalf("query %q: %v, want a FieldError on query", text, err)
			}
			return
		}
		if len(hits) > 0 && !parseQuery(text).hasPositive() {
			t.Fatalf("query %q without positive terms found %d hits", text, len(hits))
		}
	})
}

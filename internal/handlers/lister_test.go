package handlers

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// numberLister lists n://0 … n://(n-1), limit at a time, with the index
// as its cursor.
type numberLister struct{ n int }

func (l numberLister) ListResources(_ context.Context, _ Session, cursor string, limit int) ([]protocol.Resource, string, error) {
	start := 0
	if cursor != "" {
		var err error
		if start, err = strconv.Atoi(cursor); err != nil {
			return nil, "", &BadCursorError{Cursor: cursor}
		}
	}
	var out []protocol.Resource
	for i := start; i < l.n && len(out) < limit; i++ {
		out = append(out, protocol.Resource{URI: fmt.Sprintf("n://%d", i), Name: strconv.Itoa(i)})
	}
	next := ""
	if start+len(out) < l.n {
		next = strconv.Itoa(start + len(out))
	}
	return out, next, nil
}

// resources/list walks the concrete resources, then the lister's, each
// exactly once, following nextCursor; a forged cursor is -32602.
func TestResourceListerPagination(t *testing.T) {
	for _, tc := range []struct {
		name            string
		static, dynamic int
	}{
		{"static and dynamic", 3, 5},
		{"static only", 3, 0},
		{"dynamic only", 0, 5},
		{"even pages", 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for i := range tc.static {
				if err := e.s.AddResource(staticResource(fmt.Sprintf("test://s/%d", i), "x")); err != nil {
					t.Fatal(err)
				}
			}
			e.s.SetResourceLister(numberLister{n: tc.dynamic})
			seen := map[string]int{}
			params := `{}`
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("pagination does not end")
				}
				res := unmarshal[protocol.ListResourcesResult](t, e.ok(t, protocol.MethodResourcesList, params))
				for _, r := range res.Resources {
					seen[r.URI]++
				}
				if res.NextCursor == "" {
					break
				}
				params = fmt.Sprintf(`{"cursor":%q}`, res.NextCursor)
			}
			if len(seen) != tc.static+tc.dynamic {
				t.Errorf("saw %d resources, want %d: %v", len(seen), tc.static+tc.dynamic, seen)
			}
			for uri, n := range seen {
				if n != 1 {
					t.Errorf("%s listed %d times", uri, n)
				}
			}
		})
	}
	e := newEnv(t)
	e.s.SetResourceLister(numberLister{n: 3})
	e.fails(t, protocol.CodeInvalidParams, protocol.MethodResourcesList, `{"cursor":"d:forged"}`)
}

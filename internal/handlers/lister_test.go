package handlers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// numberLister lists n://0 … n://(n-1), at most limit (and at most max,
// when set) at a time, with the index as its cursor. A sloppy lister
// returns a next cursor whenever its page is full, as one that cannot
// tell whether more follow does.
type numberLister struct {
	n, max int
	sloppy bool
	err    error
}

func (l numberLister) ListResources(_ context.Context, _ Session, cursor string, limit int) ([]protocol.Resource, string, error) {
	if l.err != nil {
		return nil, "", l.err
	}
	start := 0
	if cursor != "" {
		var err error
		if start, err = strconv.Atoi(cursor); err != nil {
			return nil, "", &BadCursorError{Cursor: cursor}
		}
	}
	if l.max > 0 {
		limit = min(limit, l.max)
	}
	var out []protocol.Resource
	for i := start; i < l.n && len(out) < limit; i++ {
		out = append(out, protocol.Resource{URI: fmt.Sprintf("n://%d", i), Name: strconv.Itoa(i)})
	}
	next := ""
	if start+len(out) < l.n || l.sloppy && len(out) == limit {
		next = strconv.Itoa(start + len(out))
	}
	return out, next, nil
}

// resources/list walks the lister's resources first, then the concrete
// ones, each exactly once, following nextCursor; every page but the last
// is full (PageSize 2), so where the lister's resources end the concrete
// ones fill the page instead of the walk stopping at a short page.
func TestResourceListerPagination(t *testing.T) {
	for _, tc := range []struct {
		name            string
		static, dynamic int
		lister          numberLister // n is set from dynamic
		want            string       // the pages, "|" between them
	}{
		{"one of each", 1, 1, numberLister{}, "n://0 s://0"},
		{"static only", 3, 0, numberLister{}, "s://0 s://1|s://2"},
		{"dynamic only", 0, 5, numberLister{}, "n://0 n://1|n://2 n://3|n://4"},
		{"static fills the last dynamic page", 3, 5, numberLister{}, "n://0 n://1|n://2 n://3|n://4 s://0|s://1 s://2"},
		{"dynamic ends on a page boundary", 1, 4, numberLister{}, "n://0 n://1|n://2 n://3|s://0"},
		{"nothing", 0, 0, numberLister{}, ""},
		{"lister returns one at a time", 3, 3, numberLister{max: 1}, "n://0 n://1|n://2 s://0|s://1 s://2"},
		{"lister cannot tell it is done", 1, 2, numberLister{sloppy: true}, "n://0 n://1|s://0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for i := range tc.static {
				if err := e.s.AddResource(staticResource(fmt.Sprintf("s://%d", i), "x")); err != nil {
					t.Fatal(err)
				}
			}
			l := tc.lister
			l.n = tc.dynamic
			e.s.SetResourceLister(l)
			var pages []string
			params := `{}`
			for {
				if len(pages) > 20 {
					t.Fatalf("pagination does not end: %v", pages)
				}
				res := unmarshal[protocol.ListResourcesResult](t, e.ok(t, protocol.MethodResourcesList, params))
				var uris []string
				for _, r := range res.Resources {
					uris = append(uris, r.URI)
				}
				pages = append(pages, strings.Join(uris, " "))
				if res.NextCursor == "" {
					break
				}
				if len(res.Resources) != 2 {
					t.Errorf("page %d has %d items and a next cursor, want 2", len(pages), len(res.Resources))
				}
				params = fmt.Sprintf(`{"cursor":%q}`, res.NextCursor)
			}
			if got := strings.Join(pages, "|"); got != tc.want {
				t.Errorf("pages %q, want %q", got, tc.want)
			}
		})
	}
}

// A cursor resources/list did not issue is -32602, whether it claims to
// be the lister's or an offset; a failing lister is the lister's error
// (an internal error, -32603, to the client), not a bad cursor.
func TestResourceListerErrors(t *testing.T) {
	down := errors.New("store down")
	for _, tc := range []struct {
		name   string
		lister numberLister
		cursor string
		code   int // 0: the lister's error
	}{
		{"forged lister cursor", numberLister{n: 3}, "d:forged", protocol.CodeInvalidParams},
		{"forged offset cursor", numberLister{n: 3}, "forged", protocol.CodeInvalidParams},
		{"offset cursor of an earlier version", numberLister{n: 3}, base64.RawURLEncoding.EncodeToString([]byte("o1:0")), protocol.CodeInvalidParams},
		{"another list's cursor", numberLister{n: 3}, encodeCursor(kindTools, listKey{name: "s://0"}), protocol.CodeInvalidParams},
		{"lister fails", numberLister{err: down}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.s.AddResource(staticResource("s://0", "x")); err != nil {
				t.Fatal(err)
			}
			e.s.SetResourceLister(tc.lister)
			params := `{}`
			if tc.cursor != "" {
				params = fmt.Sprintf(`{"cursor":%q}`, tc.cursor)
			}
			if tc.code != 0 {
				e.fails(t, tc.code, protocol.MethodResourcesList, params)
				return
			}
			_, res, err := e.handle(protocol.MethodResourcesList, params)
			var perr *protocol.Error
			if !errors.Is(err, down) || errors.As(err, &perr) {
				t.Errorf("got %v, %v; want the lister's error", res, err)
			}
		})
	}
}

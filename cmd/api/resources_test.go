package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// listPages walks resources/list from the first page to the last,
// sending each cursor to the next of clients in turn, and returns the
// URIs of each page. It fails the test on a page of more than pageSize
// items, or of fewer with a next cursor: only the last page may be short.
func listPages(t *testing.T, pageSize int, clients ...*mcp.ClientSession) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var pages [][]string
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("resources/list does not end: %v", pages)
		}
		res, err := clients[i%len(clients)].ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("resources/list, page %d: %v", i+1, err)
		}
		var uris []string
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		pages = append(pages, uris)
		if len(uris) > pageSize || res.NextCursor != "" && len(uris) < pageSize {
			t.Errorf("page %d holds %d resources (next cursor %q), page size %d: %v", i+1, len(uris), res.NextCursor, pageSize, uris)
		}
		if res.NextCursor == "" {
			return pages
		}
		cursor = res.NextCursor
	}
}

// resources/list through the real server, over PostgreSQL and Redis:
// after a tenant stores memory entries, creates a session and registers
// an agent, the first page holds them most recently updated first, with
// runtime://info after them. Walking every page — each cursor sent to
// the other of two replicas — yields each resource exactly once, and no
// page but the last is short, so none is a lone item before a cursor.
// Another tenant lists its own entry and runtime://info, nothing of the
// first's.
func TestResourcesList_RecentFirst(t *testing.T) {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	base := pgConfig(t)
	base.RedisURL = "redis://" + redistest.Shared(t) + "/0"
	base.Redis.KeyPrefix = "reslist-test-" + hex.EncodeToString(suffix[:]) + ":"
	base.Redis.TimeoutMs = 2000 // a loaded test machine may stall a call; latency is not measured here
	base.Auth.Mode = auth.ModeAPIKey
	keyA, secretA := apiKey("alice", "team-a")
	keyB, secretB := apiKey("bob", "team-b")
	base.Auth.APIKeys = []auth.APIKey{keyA, keyB}
	replica := func(pageSize int) string {
		cfg := base
		if pageSize > 0 {
			cfg.Transport.PageSize = pageSize
		}
		url, _ := runServer(t, cfg, io.Discard)
		return url
	}

	url := replica(0)
	a, b := connectAs(t, url, secretA, nil), connectAs(t, url, secretB, nil)
	store := func(cs *mcp.ClientSession, ns, key string) string {
		t.Helper()
		mustSucceed(t, call(t, cs, "memory_store", map[string]any{"namespace": ns, "key": key, "value": key}), "memory_store "+key)
		return "memory://" + ns + "/" + key
	}
	// Oldest first; the one stored again last moves to the front.
	first := store(a, "notes", "first")
	second := store(a, "notes", "second")
	created := call(t, a, "session_create", map[string]any{"task": "ship", "initiator": "lead"})
	mustSucceed(t, created, "session_create")
	var sess struct{ ID string }
	if err := json.Unmarshal(created.Data, &sess); err != nil || sess.ID == "" {
		t.Fatalf("session_create data %s: %v", created.Data, err)
	}
	mustSucceed(t, call(t, a, "agent_register", map[string]any{"agentId": "reviewer", "description": "reviews"}), "agent_register")
	third := store(a, "plans", "third")
	store(a, "notes", "first")
	theirs := store(b, "notes", "theirs")
	want := []string{first, third, "agent://reviewer", "session://" + sess.ID, second, "runtime://info"}

	// The first page a client reads, with the default page size: the
	// tenant's resources newest first, every lastModified at or before
	// the one above it, then the static one.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var got []string
	last := ""
	for _, r := range res.Resources {
		got = append(got, r.URI)
		if r.URI == "runtime://info" {
			continue
		}
		if r.Annotations == nil || r.Annotations.LastModified == "" {
			t.Errorf("%s has no lastModified", r.URI)
			continue
		}
		if last != "" && laterThan(t, r.Annotations.LastModified, last) {
			t.Errorf("%s was modified at %s, after the resource before it (%s)", r.URI, r.Annotations.LastModified, last)
		}
		last = r.Annotations.LastModified
	}
	if !slices.Equal(got, want) || res.NextCursor != "" {
		t.Errorf("first page\n  %v (next cursor %q)\nwant\n  %v", got, res.NextCursor, want)
	}
	if pages := listPages(t, config.Default().Transport.PageSize, b); fmt.Sprint(pages) != fmt.Sprint([][]string{{theirs, "runtime://info"}}) {
		t.Errorf("the other tenant lists %v, want its own entry and runtime://info", pages)
	}

	for _, tc := range []struct {
		pageSize int
		want     [][]string
	}{
		{2, [][]string{want[0:2], want[2:4], want[4:6]}},
		{4, [][]string{want[0:4], want[4:6]}},
		{5, [][]string{want[0:5], want[5:6]}},
		{6, [][]string{want}},
	} {
		t.Run(fmt.Sprintf("page size %d", tc.pageSize), func(t *testing.T) {
			one, other := replica(tc.pageSize), replica(tc.pageSize)
			pages := listPages(t, tc.pageSize, connectAs(t, one, secretA, nil), connectAs(t, other, secretA, nil))
			if fmt.Sprint(pages) != fmt.Sprint(tc.want) {
				t.Errorf("pages\n  %v\nwant\n  %v", pages, tc.want)
			}
			seen := map[string]int{}
			for _, p := range pages {
				for _, uri := range p {
					seen[uri]++
				}
			}
			for _, uri := range want {
				if seen[uri] != 1 {
					t.Errorf("%s listed %d times", uri, seen[uri])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("listed %d resources, want %d: %v", len(seen), len(want), seen)
			}
			if strings.Contains(fmt.Sprint(pages), theirs) {
				t.Errorf("the other tenant's %s is listed", theirs)
			}
		})
	}
}

// laterThan reports whether RFC 3339 time a is after b.
func laterThan(t *testing.T, a, b string) bool {
	t.Helper()
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	if errA != nil || errB != nil {
		t.Fatalf("lastModified %q, %q: %v %v", a, b, errA, errB)
	}
	return ta.After(tb)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// modernMeta is the _meta of a 2026-07-28 request that declares no
// client capabilities.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// A client of the 2026-07-28 era stores and reads through cmd/api with no
// session, as defaults ship it, and the results carry the hints the
// policies give: the memory domain is invalidated by its mutations, so a
// read is kept for no time and privately; the tool list is the same for
// every caller, kept for at most the federation's sync interval.
func TestModernRequests(t *testing.T) {
	cfg := pgConfig(t)
	url, _ := runServer(t, cfg, io.Discard)
	modern := func(method, name, params string) map[string]any {
		t.Helper()
		h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
		if name != "" {
			h = append(h, "Mcp-Name", name)
		}
		a := post(t, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+`,`+modernMeta+`}}`, h...)
		if a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("%s: %d %s (session %q)", method, a.status, a.body, a.header.Get("Mcp-Session-Id"))
		}
		var env struct {
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(a.body), &env); err != nil || env.Error != nil {
			t.Fatalf("%s: %s", method, a.body)
		}
		return env.Result
	}
	if r := modern("tools/call", "memory_store", `"name":"memory_store","arguments":{"namespace":"team","key":"plan","value":{"step":1}}`); r["isError"] == true {
		t.Fatalf("memory_store: %v", r)
	}
	read := modern("resources/read", "memory://team/plan", `"uri":"memory://team/plan"`)
	if read["ttlMs"] != float64(0) || read["cacheScope"] != "private" || read["resultType"] != "complete" {
		t.Fatalf("resources/read hints %v %v %v", read["resultType"], read["ttlMs"], read["cacheScope"])
	}
	list := modern("tools/list", "", `"cursor":null`)
	if want := float64(cfg.Federation.SyncInterval().Milliseconds()); list["ttlMs"] != want || list["cacheScope"] != "public" {
		t.Fatalf("tools/list hints %v %v, want %v public", list["ttlMs"], list["cacheScope"], want)
	}
}

// The hints as the policies give them, method by method.
func TestCacheHints(t *testing.T) {
	const hour = time.Hour
	engine := func(c statesync.Config) *statesync.Hints {
		e, err := statesync.NewEngine(c)
		if err != nil {
			t.Fatal(err)
		}
		return statesync.NewHints(e, hour)
	}
	shipped := engine(config.Default().StateSync.SyncConfig())
	reference := engine(statesync.Config{Defaults: statesync.Defaults{CacheControl: statesync.NoStore},
		Policies: []statesync.Policy{{Match: "countries.*", CacheControl: statesync.Immutable}}})
	cases := []struct {
		name   string
		hints  *cacheHints
		method string
		params string
		want   protocol.CacheHint
	}{
		{"memory, invalidated by its mutations", &cacheHints{sync: shipped, lists: time.Minute}, "resources/read", `{"uri":"memory://team/plan"}`, protocol.CacheHint{}},
		{"an immutable domain", &cacheHints{sync: reference, lists: time.Minute}, "resources/read", `{"uri":"countries://FR"}`, protocol.CacheHint{TTL: hour}},
		{"State Sync off", &cacheHints{sync: nil, lists: time.Minute}, "resources/read", `{"uri":"countries://FR"}`, protocol.CacheHint{}},
		{"tools/list", &cacheHints{sync: shipped, lists: time.Minute}, "tools/list", `{}`, protocol.CacheHint{TTL: time.Minute, Public: true}},
		{"prompts/list", &cacheHints{sync: shipped, lists: time.Minute}, "prompts/list", `{}`, protocol.CacheHint{TTL: time.Minute, Public: true}},
		{"resources/templates/list", &cacheHints{sync: shipped, lists: time.Minute}, "resources/templates/list", `{}`, protocol.CacheHint{TTL: time.Minute, Public: true}},
		{"resources/list, a tenant's entities", &cacheHints{sync: shipped, lists: time.Minute}, "resources/list", `{}`, protocol.CacheHint{}},
		{"tools/list, a modern upstream's shorter hint", &cacheHints{sync: shipped, lists: time.Minute, upstreams: fixedHint{TTL: 5 * time.Second}}, "tools/list", `{}`, protocol.CacheHint{TTL: 5 * time.Second, Public: true}},
		{"tools/list, a modern upstream's longer hint", &cacheHints{sync: shipped, lists: time.Minute, upstreams: fixedHint{TTL: time.Hour}}, "tools/list", `{}`, protocol.CacheHint{TTL: time.Minute, Public: true}},
		{"tools/list, an upstream's private list", &cacheHints{sync: shipped, lists: time.Minute, upstreams: fixedHint{TTL: time.Hour, Private: true}}, "tools/list", `{}`, protocol.CacheHint{TTL: time.Minute}},
		{"tools/list, legacy upstreams only", &cacheHints{sync: shipped, lists: time.Minute, upstreams: noHint{}}, "tools/list", `{}`, protocol.CacheHint{TTL: time.Minute, Public: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.hints.Hint(tc.method, json.RawMessage(tc.params)); got != tc.want {
				t.Fatalf("Hint(%s, %s) = %+v, want %+v", tc.method, tc.params, got, tc.want)
			}
		})
	}
}

// fixedHint is a federation whose modern upstreams gave a tool-list hint.
type fixedHint upstream.ListHint

func (h fixedHint) ToolListHint() (upstream.ListHint, bool) { return upstream.ListHint(h), true }

// noHint is a federation whose upstreams gave none.
type noHint struct{}

func (noHint) ToolListHint() (upstream.ListHint, bool) { return upstream.ListHint{}, false }

// The era the gateway speaks to each upstream is the upstream's own,
// whatever its client's (docs/adr/0051-modern-era-requests.md): a
// modern client and a legacy one both call a legacy upstream and a
// modern (stateless) one, and each upstream hears its own era.
func TestUpstreamsKeepTheirEra(t *testing.T) {
	var calls atomic.Int64
	var mu sync.Mutex
	heard := map[string][]string{} // upstream → MCP-Protocol-Version of its tools/call requests
	serve := func(name string, stateless bool) string {
		s := sdkServer(name, &calls)
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(string(body), `"method":"tools/call"`) {
				mu.Lock()
				heard[name] = append(heard[name], r.Header.Get("MCP-Protocol-Version"))
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	legacyURL, modernURL := serve("old", false), serve("new", true)
	cs, url := federate(t, []upstream.Config{{ID: "old", URL: legacyURL}, {ID: "new", URL: modernURL}}, "old_search", "new_search")

	for _, tool := range []string{"old_search", "new_search"} {
		// A legacy client (the go-sdk's, pinned to 2025-11-25).
		env, _ := proxied(t, cs, tool, map[string]any{"query": "q"})
		if !env.Success {
			t.Fatalf("legacy client, %s: %+v", tool, env)
		}
		// A modern client.
		a := post(t, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"query":"q"},`+modernMeta+`}}`,
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool)
		if a.status != http.StatusOK || !strings.Contains(a.body, `"resultType":"complete"`) || !strings.Contains(a.body, strings.TrimSuffix(tool, "_search")+`:q`) {
			t.Fatalf("modern client, %s: %d %s", tool, a.status, a.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for name, want := range map[string]string{"old": "2025-11-25", "new": "2026-07-28"} {
		if len(heard[name]) != 2 {
			t.Fatalf("upstream %s heard %d calls, want 2 (%v)", name, len(heard[name]), heard)
		}
		for _, v := range heard[name] {
			if v != want {
				t.Errorf("upstream %s was called in protocol %q, want %q", name, v, want)
			}
		}
	}
}

// A modern upstream that lets its tool list be kept five seconds, and
// only privately, shortens the gateway's own hint and makes it private:
// the gateway's list holds that upstream's tools.
func TestUpstreamToolListHint(t *testing.T) {
	var calls atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "hinted", Version: "1.0.0"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs, c.CacheScope = 5000, "private" },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Searches."},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
			calls.Add(1)
			return nil, searchOut{Hits: []string{in.Query}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	_, url := federate(t, []upstream.Config{{ID: "hinted", URL: up.URL}}, "hinted_search")

	a := post(t, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")
	var env struct {
		Result struct {
			TTLMs      *int64 `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(a.body), &env); err != nil || env.Result.TTLMs == nil {
		t.Fatalf("tools/list: %d %s", a.status, a.body)
	}
	if *env.Result.TTLMs != 5000 || env.Result.CacheScope != "private" {
		t.Errorf("tools/list hint ttlMs %d, %s; want 5000, private (the upstream's)", *env.Result.TTLMs, env.Result.CacheScope)
	}
}

package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of both eras and of two tenants on one server at once: what
// one tenant writes, in either era, the other cannot read, list, search
// or hear about, in either era; a legacy subscriber hears of its own
// tenant's change whichever era made it; and a modern request that
// carries another tenant's client session id is served as the request
// of its own token's tenant, not inside that session
// (docs/adr/0051-modern-era-requests.md).
func TestAuth_TenantIsolationAcrossEras(t *testing.T) {
	url, token := oauthServer(t, io.Discard)
	tokA, tokB := token("alice", "team-a", "mcp:tools"), token("bob", "team-b", "mcp:tools")
	var legacyAGot, legacyBGot notified
	clients := map[string]*mcp.ClientSession{
		"legacy A": connectIn(t, legacyEra, url, tokA, &legacyAGot),
		"modern A": connectIn(t, modernEra, url, tokA, nil),
		"legacy B": connectIn(t, legacyEra, url, tokB, &legacyBGot),
		"modern B": connectIn(t, modernEra, url, tokB, nil),
	}
	ctx := context.Background()
	for _, name := range []string{"legacy A", "legacy B"} {
		for _, uri := range []string{"memory://plans/legacy-a", "memory://plans/modern-a", "memory://plans/legacy-b", "memory://plans/modern-b"} {
			if err := clients[name].Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("%s subscribes to %s: %v", name, uri, err)
			}
		}
	}
	if modern := clients["modern A"]; modern.ID() != "" || modern.InitializeResult().ProtocolVersion != "2026-07-28" {
		t.Fatalf("modern A: session %q, protocol %s", modern.ID(), modern.InitializeResult().ProtocolVersion)
	}

	cases := []struct{ writer, reader, key string }{
		{"legacy A", "modern B", "legacy-a"},
		{"modern A", "legacy B", "modern-a"},
		{"modern A", "modern B", "modern-a"},
		{"legacy B", "modern A", "legacy-b"},
		{"modern B", "legacy A", "modern-b"},
	}
	for _, tc := range cases {
		t.Run(tc.writer+" writes, "+tc.reader+" looks", func(t *testing.T) {
			w, r := clients[tc.writer], clients[tc.reader]
			secret := "secret-of-" + tc.key
			mustSucceed(t, call(t, w, "memory_store", map[string]any{"namespace": "plans", "key": tc.key, "value": secret}), tc.writer+" stores")
			if env := call(t, w, "memory_retrieve", map[string]any{"namespace": "plans", "key": tc.key}); !env.Success {
				t.Errorf("%s cannot read back its own entry: %+v", tc.writer, env)
			}
			if env := call(t, r, "memory_retrieve", map[string]any{"namespace": "plans", "key": tc.key}); env.Success || env.Error.Code != "NOT_FOUND" {
				t.Errorf("%s retrieves %s's entry: %+v", tc.reader, tc.writer, env)
			}
			for _, probe := range []string{"memory_list", "memory_search"} {
				args := map[string]any{"namespace": "plans"}
				if probe == "memory_search" {
					args = map[string]any{"query": secret}
				}
				env := call(t, r, probe, args)
				mustSucceed(t, env, tc.reader+" "+probe)
				if strings.Contains(string(env.Data), secret) {
					t.Errorf("%s's %s shows %s's entry: %s", tc.reader, probe, tc.writer, env.Data)
				}
			}
			if res, err := r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://plans/" + tc.key}); err == nil {
				t.Errorf("%s reads %s's resource: %+v", tc.reader, tc.writer, res)
			}
		})
	}
	// Each legacy subscriber heard its own tenant's changes, made in each
	// era (modern A stored twice), and nothing of the other tenant's:
	// waitFor wants exactly these, extras included.
	legacyAGot.waitFor(t, "memory://plans/legacy-a", "memory://plans/modern-a", "memory://plans/modern-a")
	legacyBGot.waitFor(t, "memory://plans/legacy-b", "memory://plans/modern-b")

	// B's token with A's client session id on a modern request: the id is
	// ignored, and the request is B's.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_retrieve","arguments":{"namespace":"plans","key":"legacy-a"},` + modernMeta + `}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + tokB, "Mcp-Session-Id": clients["legacy A"].ID(),
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "memory_retrieve",
	} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "NOT_FOUND") || strings.Contains(string(answer), "secret-of-legacy-a") || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("B's modern request with A's session id: %d %s (session %q)", resp.StatusCode, answer, resp.Header.Get("Mcp-Session-Id"))
	}
}

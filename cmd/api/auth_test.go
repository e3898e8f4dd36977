package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// bearerTransport adds a bearer token to every request of an MCP client.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Eras a go-sdk client of a test speaks: the legacy one (2025-11-25,
// client sessions: subscriptions, the GET stream, logging/setLevel),
// and the modern one (2026-07-28, the SDK's default, found with
// server/discover).
var (
	legacyEra = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	modernEra = &mcp.ClientSessionOptions{}
)

// connectAs connects an official-SDK client of the legacy era that sends
// token (none when ""), telling n of resource updates: the tests that
// use it count, watch or subscribe through client sessions.
func connectAs(t *testing.T, url, token string, n *notified) *mcp.ClientSession {
	t.Helper()
	return connectIn(t, legacyEra, url, token, n)
}

// connectIn is connectAs in the era era.
func connectIn(t *testing.T, era *mcp.ClientSessionOptions, url, token string, n *notified) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &mcp.ClientOptions{}
	if n != nil {
		opts.ResourceUpdatedHandler = n.handler
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearerTransport{token}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts).Connect(ctx, tr, era)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// authedPing sends a ping on client session sid with a bearer token and
// returns the answer (its body closed).
func authedPing(t *testing.T, url, sid, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// oauthServer runs cmd/api in oauth mode against a test issuer; the
// resource URI is the server's own /mcp URL, as a deployment sets it.
func oauthServer(t *testing.T, logs io.Writer) (url string, token func(sub, tenant, scope string) string) {
	t.Helper()
	url, is := oauthIssuerServer(t, logs)
	token = func(sub, tenant, scope string) string {
		return is.Token(authtest.Claims("https://issuer.test", url, sub, tenant, scope), "k1")
	}
	return url, token
}

// oauthIssuerServer is oauthServer returning the issuer, whose key k1
// signs its tokens.
func oauthIssuerServer(t *testing.T, logs io.Writer) (url string, is *authtest.Issuer) {
	t.Helper()
	is = authtest.NewIssuer(t, "k1")
	cfg := config.Default()
	cfg.Auth.Mode = auth.ModeOAuth
	cfg.Auth.OAuth.Issuer = "https://issuer.test"
	cfg.Auth.OAuth.JWKSURL = is.JWKSURL()
	cfg.Auth.OAuth.RequiredScopes = []string{"mcp:tools"}
	cfg.Admin.Token = "admin-secret"
	cfg.LogLevel = "debug"
	// The resource is the server's own URL, known once it listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth.Resource = "http://" + ln.Addr().String() + "/mcp"
	url, _ = runServerOn(t, cfg, logs, ln)
	return url, is
}

// Requests without a valid token get 401 with a challenge pointing at the
// Protected Resource Metadata, which is served without credentials
// (MCP basic/authorization, RFC 9728).
func TestAuth_ChallengeAndMetadata(t *testing.T) {
	url, token := oauthServer(t, io.Discard)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	post := func(authz string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	base := strings.TrimSuffix(url, "/mcp")
	metadata := base + "/.well-known/oauth-protected-resource/mcp"
	for _, tc := range []struct {
		name, authz string
		status      int
		challenge   string
	}{
		{"no token", "", 401, `Bearer realm="mcp-runtime", resource_metadata="` + metadata + `", scope="mcp:tools"`},
		{"garbage", "Bearer x", 401, `error="invalid_token"`},
		{"missing scope", "Bearer " + token("a", "team-a", "other"), 403, `error="insufficient_scope"`},
		{"valid", "Bearer " + token("a", "team-a", "mcp:tools"), 200, ""},
	} {
		resp := post(tc.authz)
		if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("WWW-Authenticate"), tc.challenge) {
			t.Errorf("%s: %d %q, want %d with %q", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status, tc.challenge)
		}
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc auth.ResourceMetadata
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || doc.Resource != url || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != "https://issuer.test" {
			t.Errorf("GET %s: %d %+v %v", path, resp.StatusCode, doc, err)
		}
	}
}

// Two tenants share one server: B cannot read, list, search or be told
// about A's memory, through tools or resources; a session id B steals
// from A is 404 to B; the admin API wants the admin scope. And the
// tokens never reach the logs, debug level included.
func TestAuth_TenantIsolation(t *testing.T) {
	var logs syncBuffer
	url, token := oauthServer(t, &logs)
	tokA, tokB := token("alice", "team-a", "mcp:tools"), token("bob", "team-b", "mcp:tools")
	var aGot, bGot notified
	a := connectAs(t, url, tokA, &aGot)
	b := connectAs(t, url, tokB, &bGot)
	ctx := context.Background()
	const uri = "memory://plans/q3"
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	mustSucceed(t, call(t, a, "memory_store", map[string]any{"namespace": "plans", "key": "q3", "value": "ship it", "tags": []string{"secret"}}), "A stores")
	aGot.waitFor(t, uri) // A hears of its own tenant's change; B must not

	if env := call(t, b, "memory_retrieve", map[string]any{"namespace": "plans", "key": "q3"}); env.Success || env.Error.Code != "NOT_FOUND" {
		t.Errorf("B retrieves A's entry: %+v", env)
	}
	for _, probe := range []struct {
		tool string
		args map[string]any
	}{
		{"memory_list", map[string]any{"namespace": "plans"}},
		{"memory_search", map[string]any{"query": "ship"}},
		{"trace_list", map[string]any{"tool": "memory_store"}},
	} {
		env := call(t, b, probe.tool, probe.args)
		mustSucceed(t, env, "B "+probe.tool)
		if strings.Contains(string(env.Data), "q3") || strings.Contains(string(env.Data), "ship") || strings.Contains(string(env.Data), `"memory_store"`) {
			t.Errorf("B's %s shows A's state: %s", probe.tool, env.Data)
		}
	}
	if res, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Errorf("B reads A's resource: %+v", res)
	}
	list, err := b.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Resources {
		if r.URI == uri {
			t.Errorf("B lists A's resource %s", r.URI)
		}
	}
	if got := bGot.take(); len(got) != 0 {
		t.Errorf("B was told about A's change: %v", got)
	}

	// Collaboration sessions and agents: A's are invisible to B, by id,
	// in lists and as resources; B's stale:// subscription hears nothing
	// of A's mutations.
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: "stale://memory.*"}); err != nil {
		t.Fatal(err)
	}
	created := call(t, a, "session_create", map[string]any{"task": "plan q3", "initiator": "alice"})
	mustSucceed(t, created, "A creates a session")
	var sess struct{ ID string }
	if err := json.Unmarshal(created.Data, &sess); err != nil || sess.ID == "" {
		t.Fatalf("session_create data %s: %v", created.Data, err)
	}
	mustSucceed(t, call(t, a, "agent_register", map[string]any{"agentId": "alice-bot", "description": "plans"}), "A registers an agent")
	mustSucceed(t, call(t, a, "memory_store", map[string]any{"namespace": "plans", "key": "q4", "value": 2}), "A stores again")
	for _, probe := range []struct {
		tool string
		args map[string]any
	}{
		{"session_status", map[string]any{"sessionId": sess.ID}},
		{"agent_get", map[string]any{"agentId": "alice-bot"}},
	} {
		if env := call(t, b, probe.tool, probe.args); env.Success || env.Error.Code != "NOT_FOUND" {
			t.Errorf("B's %s of A's entity: %+v", probe.tool, env)
		}
	}
	for _, tool := range []string{"session_list", "agent_list"} {
		env := call(t, b, tool, map[string]any{})
		mustSucceed(t, env, "B "+tool)
		if strings.Contains(string(env.Data), sess.ID) || strings.Contains(string(env.Data), "alice-bot") {
			t.Errorf("B's %s shows A's entities: %s", tool, env.Data)
		}
	}
	for _, u := range []string{"session://" + sess.ID, "agent://alice-bot"} {
		if res, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: u}); err == nil {
			t.Errorf("B reads %s: %+v", u, res)
		}
	}
	time.Sleep(200 * time.Millisecond) // a notification in flight would land by now
	if got := bGot.take(); len(got) != 0 {
		t.Errorf("B was told about A's changes: %v", got)
	}
	// The subscription itself works: B's own mutation reaches it.
	mustSucceed(t, call(t, b, "memory_store", map[string]any{"namespace": "plans", "key": "b", "value": 1}), "B stores")
	bGot.waitFor(t, "stale://memory.*")

	// B steals A's session id: 404, as if it did not exist.
	if code := authedPing(t, url, a.ID(), tokB).StatusCode; code != http.StatusNotFound {
		t.Errorf("B with A's session id: %d, want 404", code)
	}
	// The same subject with a token for another tenant is another party
	// to the session: 404 too.
	if code := authedPing(t, url, a.ID(), token("alice", "team-b", "mcp:tools")).StatusCode; code != http.StatusNotFound {
		t.Errorf("A's subject with a team-b token on A's session: %d, want 404", code)
	}

	// The admin API: B's token lacks the admin scope; an admin token
	// passes, and so does the configured admin token.
	base := strings.TrimSuffix(url, "/mcp")
	for _, tc := range []struct {
		token string
		want  int
	}{
		{tokB, 403},
		{token("ops", "ops", "mcp:tools mcp:admin"), 200},
		{"admin-secret", 200},
		{"wrong", 401},
	} {
		if got, _ := adminDo(t, base, http.MethodGet, "/admin/upstreams", tc.token, ""); got != tc.want {
			t.Errorf("admin API with %.20s…: %d, want %d", tc.token, got, tc.want)
		}
	}

	for _, secret := range []string{tokA, tokB, "admin-secret"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("a credential is in the logs")
		}
		// Nor any third of a token (a JWT's signature part alone).
		if i := strings.LastIndexByte(secret, '.'); i > 0 && strings.Contains(logs.String(), secret[i+1:]) {
			t.Fatalf("a token's signature is in the logs")
		}
	}
}

// In apikey mode an admin creates a key through the admin API, an agent
// uses it (acting on the key's tenant), and after the admin revokes it
// the key gets 401 within the lookup cache's 5 seconds.
func TestAuth_APIKeyLifecycle(t *testing.T) {
	cfg := pgConfig(t)
	cfg.Auth.Mode = auth.ModeAPIKey
	cfg.Admin.Token = "admin-secret"
	url, _ := runServer(t, cfg, io.Discard)
	base := strings.TrimSuffix(url, "/mcp")
	code, body := adminDo(t, base, http.MethodPost, "/admin/apikeys", "admin-secret", `{"id":"ci-agents","tenant":"team-ci"}`)
	var created struct {
		Key    string `json:"key"`
		APIKey struct {
			ID     string `json:"id"`
			Tenant string `json:"tenant"`
		} `json:"apiKey"`
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil || code != http.StatusCreated || !strings.HasPrefix(created.Key, "mcpr_") {
		t.Fatalf("create key: %d %+v %v", code, created, err)
	}
	cs := connectAs(t, url, created.Key, nil)
	mustSucceed(t, call(t, cs, "memory_store", map[string]any{"key": "k", "value": 1}), "store with the new key")

	if code, _ := adminDo(t, base, http.MethodDelete, "/admin/apikeys/ci-agents", "admin-secret", ""); code != http.StatusOK {
		t.Fatalf("revoke: %d", code)
	}
	deadline := time.Now().Add(8 * time.Second)
	for {
		resp := authedPing(t, url, cs.ID(), created.Key)
		if resp.StatusCode == http.StatusUnauthorized {
			if !strings.Contains(resp.Header.Get("WWW-Authenticate"), "revoked") {
				t.Errorf("challenge %q does not say the key was revoked", resp.Header.Get("WWW-Authenticate"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked key still answers %d after 8s", resp.StatusCode)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

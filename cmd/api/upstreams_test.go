package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

type searchIn struct {
	Query string `json:"query" jsonschema:"what to look for"`
}

type searchOut struct {
	Hits []string `json:"hits"`
}

// sdkUpstream runs an MCP server built with the official go-sdk on a
// loopback port: "search" (read-only), "fail" (always an isError result)
// and any extra tools. calls counts the tool calls it received.
func sdkUpstream(t *testing.T, name string, calls *atomic.Int64, extra ...string) string {
	t.Helper()
	s := sdkServer(name, calls, extra...)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// sdkServer is the go-sdk server sdkUpstream serves.
func sdkServer(name string, calls *atomic.Int64, extra ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Searches " + name + ".", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
			calls.Add(1)
			return nil, searchOut{Hits: []string{name + ":" + in.Query}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, searchIn) (*mcp.CallToolResult, searchOut, error) {
			calls.Add(1)
			return nil, searchOut{}, fmt.Errorf("%s cannot do that", name)
		})
	// "open" takes any arguments ({"type":"object"}) and echoes them;
	// "big" answers with more text than the gateway's string limit.
	s.AddTool(&mcp.Tool{Name: "open", Description: "Echoes its arguments.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "big", Description: "Answers at length.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 50_000)}}}, nil
		})
	for _, tool := range extra {
		mcp.AddTool(s, &mcp.Tool{Name: tool, Description: "Extra tool " + tool + "."},
			func(context.Context, *mcp.CallToolRequest, searchIn) (*mcp.CallToolResult, searchOut, error) {
				calls.Add(1)
				return nil, searchOut{Hits: []string{tool}}, nil
			})
	}
	return s
}

// toolNames lists the exposed tool names the gateway offers.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// adminDo sends one admin API request.
func adminDo(t *testing.T, base, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// countingToolList is a client of url that counts the
// notifications/tools/list_changed it gets.
func countingToolList(t *testing.T, url string) (*mcp.ClientSession, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, legacyEra) // it hears list changes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, &n
}

// errorContext returns the envelope's error.context of a failed call.
func errorContext(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (envelopeDoc, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	env := envelope(t, res)
	var doc struct {
		Error struct {
			Context map[string]any `json:"context"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &doc)
	return env, doc.Error.Context
}

// proxied calls a tool through the gateway and describes the answer as an
// envelopeDoc. The guardrails' own failures are envelopes, in the text
// block (and in structuredContent unless the tool lists the upstream's
// outputSchema); the upstream's result is passed on as it was sent, so
// Data is its content and structuredContent, and an upstream isError
// puts its text in Error.Message.
func proxied(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (envelopeDoc, *mcp.CallToolResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var env envelopeDoc
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok && res.IsError && json.Unmarshal([]byte(tc.Text), &env) == nil && env.Error.Code != "" {
			return env, res
		}
	}
	env = envelopeDoc{Success: !res.IsError}
	env.Data, _ = json.Marshal(map[string]any{"content": res.Content, "structuredContent": res.StructuredContent})
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		env.Error.Message = strings.Join(texts, "\n")
	}
	return env, res
}

// TestUpstreamFederation drives the gateway end to end with the official
// client: two go-sdk upstreams that share a tool name and a second
// mcp-runtime behind this one; namespacing, ambiguity, validation before
// forwarding, upstream tool errors, the guardrails' envelope and traces on
// proxied calls, and an upstream added and removed through the admin API
// with tools/list_changed sent to the client each time.
func TestUpstreamFederation(t *testing.T) {
	var callsA, callsB, callsD atomic.Int64
	urlA := sdkUpstream(t, "server-a", &callsA)
	urlB := sdkUpstream(t, "server-b", &callsB)
	urlD := sdkUpstream(t, "server-d", &callsD, "lookup")
	inner, _ := runServer(t, config.Default(), io.Discard)

	cfg := config.Default()
	cfg.Admin.Token = "admin-secret"
	cfg.Upstreams = []upstream.Config{
		{ID: "server-a", URL: urlA},
		{ID: "server-b", URL: urlB},
		{ID: "runtime2", URL: inner},
	}
	url, _ := runServer(t, cfg, io.Discard)
	base := strings.TrimSuffix(url, "/mcp")

	cs, listChanged := countingToolList(t, url)

	waitFor(t, func() bool {
		names := toolNames(t, cs)
		return slices.Contains(names, "server-a_search") && slices.Contains(names, "server-b_search") &&
			slices.Contains(names, "runtime2_memory_store")
	})

	t.Run("qualified names resolve", func(t *testing.T) {
		for _, name := range []string{"server-a.search", "server-a_search"} {
			env, _ := proxied(t, cs, name, map[string]any{"query": "q"})
			mustSucceed(t, env, name)
			if !strings.Contains(string(env.Data), `server-a:q`) || !strings.Contains(string(env.Data), `"content"`) {
				t.Fatalf("%s data = %s", name, env.Data)
			}
		}
	})
	t.Run("an ambiguous bare name lists the candidates", func(t *testing.T) {
		env, ctx := errorContext(t, cs, "search", map[string]any{"query": "q"})
		if env.Success || env.Error.Code != "AMBIGUOUS_TOOL" {
			t.Fatalf("search: %+v", env)
		}
		if fmt.Sprint(ctx["candidates"]) != "[server-a_search server-b_search]" {
			t.Fatalf("candidates = %v", ctx["candidates"])
		}
	})
	t.Run("built-in tools keep their names", func(t *testing.T) {
		env := call(t, cs, "memory_store", map[string]any{"key": "k", "value": 1})
		mustSucceed(t, env, "built-in memory_store is untouched")
	})
	t.Run("invalid arguments never reach the upstream", func(t *testing.T) {
		before := callsA.Load()
		env, _ := proxied(t, cs, "server-a_search", map[string]any{"query": 42})
		if env.Success || !strings.Contains(env.Error.Message, "query") {
			t.Fatalf("bad arguments: %+v", env)
		}
		if callsA.Load() != before {
			t.Fatal("the upstream was called with arguments its schema rejects")
		}
	})
	t.Run("extra arguments pass when the schema allows them", func(t *testing.T) {
		env, _ := proxied(t, cs, "server-a_open", map[string]any{"anything": []int{1, 2}, "else": "x"})
		mustSucceed(t, env, "open")
		if !strings.Contains(string(env.Data), `\"anything\":[1,2]`) || !strings.Contains(string(env.Data), `\"else\":\"x\"`) {
			t.Fatalf("the upstream did not get the extra arguments: %s", env.Data)
		}
	})
	t.Run("a proxied text block is cut like any string, and says so", func(t *testing.T) {
		env, res := proxied(t, cs, "server-a_big", nil)
		mustSucceed(t, env, "big")
		text := res.Content[0].(*mcp.TextContent).Text
		meta, _ := res.Meta["io.mcp-runtime/call"].(map[string]any)
		if n := utf8.RuneCountInString(text); n != 10_000 || !strings.HasSuffix(text, "... [truncated]") || meta["truncated"] != true {
			t.Fatalf("50,000 characters came back as %d, _meta %v", n, res.Meta)
		}
	})
	t.Run("an upstream tool error is passed on as the upstream sent it", func(t *testing.T) {
		env, res := proxied(t, cs, "server-a_fail", map[string]any{"query": "q"})
		if env.Success || env.Error.Message != "server-a cannot do that" || len(res.Content) != 1 {
			t.Fatalf("fail: %+v", env)
		}
	})
	t.Run("mcp-runtime behind mcp-runtime", func(t *testing.T) {
		mustSucceed(t, call(t, cs, "runtime2_memory_store", map[string]any{"key": "via-gateway", "value": map[string]any{"n": 7}}), "store via gateway")
		direct := connect(t, inner)
		env := call(t, direct, "memory_retrieve", map[string]any{"key": "via-gateway"})
		mustSucceed(t, env, "retrieve directly")
		if !strings.Contains(string(env.Data), `"n":7`) {
			t.Fatalf("inner server has %s", env.Data)
		}
	})
	t.Run("proxied calls are traced", func(t *testing.T) {
		// Traces are written in batches, off the call's path.
		waitFor(t, func() bool {
			env := call(t, cs, "trace_list", map[string]any{"tool": "server-a.search"})
			mustSucceed(t, env, "trace_list")
			return strings.Contains(string(env.Data), `"tool":"server-a.search"`)
		})
	})
	t.Run("admin API adds and removes an upstream", func(t *testing.T) {
		body := `{"id":"server-d","url":"` + urlD + `","headers":{"Authorization":"Bearer upstream-secret"}}`
		if code, _ := adminDo(t, base, http.MethodPost, "/admin/upstreams", "", body); code != http.StatusUnauthorized {
			t.Fatalf("no token: %d", code)
		}
		code, resp := adminDo(t, base, http.MethodPost, "/admin/upstreams", "admin-secret", body)
		if code != http.StatusCreated || strings.Contains(resp, "upstream-secret") {
			t.Fatalf("create: %d %s", code, resp)
		}
		before := listChanged.Load()
		waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "server-d_lookup") })
		waitFor(t, func() bool { return listChanged.Load() > before })
		env, _ := proxied(t, cs, "lookup", map[string]any{"query": "x"})
		mustSucceed(t, env, "bare lookup")
		if callsD.Load() != 1 {
			t.Fatalf("server-d got %d calls", callsD.Load())
		}
		code, resp = adminDo(t, base, http.MethodGet, "/admin/upstreams/server-d", "admin-secret", "")
		if code != http.StatusOK || !strings.Contains(resp, `"state":"connected"`) || strings.Contains(resp, "upstream-secret") {
			t.Fatalf("get: %d %s", code, resp)
		}
		if code, resp := adminDo(t, base, http.MethodDelete, "/admin/upstreams/server-a", "admin-secret", ""); code != http.StatusConflict {
			t.Fatalf("deleting a server declared in the file: %d %s", code, resp)
		}
		before = listChanged.Load()
		if code, resp := adminDo(t, base, http.MethodDelete, "/admin/upstreams/server-d", "admin-secret", ""); code != http.StatusNoContent {
			t.Fatalf("delete: %d %s", code, resp)
		}
		waitFor(t, func() bool { return !slices.Contains(toolNames(t, cs), "server-d_lookup") })
		waitFor(t, func() bool { return listChanged.Load() > before })
	})
	t.Run("metrics export upstream states", func(t *testing.T) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(b, []byte(`mcp_upstream_state{server="server-a",state="connected"} 1`)) {
			t.Fatalf("metrics lack server-a's state:\n%s", b)
		}
	})
}

// A server whose requestTimeoutMs its category's timeout cuts short gets
// one warning naming both values, however often the tool set is synced.
func TestUpstreamRequestTimeoutAboveCategoryWarns(t *testing.T) {
	var calls atomic.Int64
	urlQ := sdkUpstream(t, "server-q", &calls)
	urlE := sdkUpstream(t, "server-e", &calls)
	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{
		{ID: "server-q", URL: urlQ, Category: "query"}, // default 30 s > query's 10 s
		{ID: "server-e", URL: urlE, Category: "query", RequestTimeoutMs: 5000},
	}
	var logs syncBuffer
	url, _ := runServer(t, cfg, &logs)
	cs := connect(t, url)
	waitFor(t, func() bool {
		names := toolNames(t, cs)
		return slices.Contains(names, "server-q_search") && slices.Contains(names, "server-e_search")
	})
	const msg = "upstream requestTimeoutMs is not below its tools' timeout"
	// The log is written asynchronously: wait for the line, then give a
	// second warning the time to show up.
	waitFor(t, func() bool { return strings.Contains(logs.String(), msg) })
	time.Sleep(200 * time.Millisecond)
	out := logs.String()
	if n := strings.Count(out, msg); n != 1 {
		t.Fatalf("%d warnings, want 1 (for server-q):\n%s", n, out)
	}
	for _, want := range []string{`"server":"server-q"`, `"category":"query"`} {
		if !strings.Contains(out, want) {
			t.Errorf("warning lacks %s", want)
		}
	}
}

// Replicas of one deployment derive the same id from what they share —
// the Redis server and database, and redis.keyPrefix — and nothing else
// (not the URL's password or options); the id shows none of it.
func TestDeploymentID(t *testing.T) {
	with := func(redisURL, prefix, explicit string) config.Config {
		c := config.Default()
		c.RedisURL, c.Redis.KeyPrefix, c.Federation.DeploymentID = redisURL, prefix, explicit
		return c
	}
	base := deploymentID(with("redis://redis-master:6379/0", "prod:", ""))
	tests := []struct {
		name string
		cfg  config.Config
		same bool
	}{
		{"another password and options", with("redis://:s3cret@redis-master:6379/0?dial_timeout=3s", "prod:", ""), true},
		{"another key prefix", with("redis://redis-master:6379/0", "staging:", ""), false},
		{"another database", with("redis://redis-master:6379/1", "prod:", ""), false},
		{"another server", with("redis://redis-2:6379/0", "prod:", ""), false},
	}
	for _, tt := range tests {
		if got := deploymentID(tt.cfg); (got == base) != tt.same {
			t.Errorf("%s: %s vs %s, want same %v", tt.name, got, base, tt.same)
		}
	}
	// A cluster deployment's replicas may list its nodes in any order;
	// before modes existed, a cluster URL was refused and each replica
	// got a random id, so the deployment did not know itself.
	cluster := func(url string) config.Config {
		c := with(url, "prod:", "")
		c.Redis.Mode = "cluster"
		return c
	}
	a := deploymentID(cluster("redis://n1:6379?addr=n2:6379&addr=n3:6379"))
	if b := deploymentID(cluster("redis://:pw@n3:6379?addr=n1:6379&addr=n2:6379")); a != b {
		t.Errorf("one cluster named in another order: %s vs %s", a, b)
	}
	if b := deploymentID(cluster("redis://n1:6379?addr=n2:6379&addr=n4:6379")); a == b {
		t.Errorf("another cluster: the same id %s", a)
	}
	for _, leak := range []string{"redis-master", "6379", "prod", "s3cret"} {
		if strings.Contains(base, leak) {
			t.Errorf("the id %s shows %q", base, leak)
		}
	}
	if got := deploymentID(with("redis://redis-master:6379/0", "prod:", "eu-1")); got != "eu-1" {
		t.Errorf("federation.deploymentId not used: %s", got)
	}
	if a, b := deploymentID(config.Default()), deploymentID(config.Default()); a == b || !upstream.ValidDeploymentID(a) {
		t.Errorf("without Redis: %s and %s; want two random ids", a, b)
	}
}

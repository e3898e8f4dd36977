package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// syncBuffer collects the server's log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer runs the real cmd/api wiring on a free loopback port and
// collects its log.
// noEnv is an empty environment, for newApp.
func noEnv(string) string { return "" }

func startServer(t *testing.T, cfg config.Config) (url string, logs *syncBuffer) {
	t.Helper()
	logs = &syncBuffer{}
	url, _ = runServer(t, cfg, logs)
	return url, logs
}

// TestAPI_OfficialClient drives cmd/api with the official Go SDK client,
// in each era: the handshake (initialize, or server/discover), tools/list,
// tools/call by exposed name, a validation failure and resources/read;
// in the legacy era also subscribe, ping and DELETE on close, which the
// modern era removed (basic/versioning).
func TestAPI_OfficialClient(t *testing.T) {
	url, logs := startServer(t, config.Default())
	cases := []struct {
		name    string
		era     *mcp.ClientSessionOptions
		version string
	}{
		{"legacy", legacyEra, "2025-11-25"},
		{"modern (the SDK's default)", modernEra, "2026-07-28"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			officialClient(t, url, tc.era, tc.version)
		})
	}

	// One structured line per request, naming the tool, never the arguments.
	waitFor(t, func() bool { return strings.Contains(logs.String(), `"tool":"runtime.echo"`) })
	if strings.Contains(logs.String(), "héllo") {
		t.Error("tool arguments appear in the info-level request log")
	}
}

func officialClient(t *testing.T, url string, era *mcp.ClientSessionOptions, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	legacy := version != "2026-07-28"

	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, era)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if init := cs.InitializeResult(); init.ProtocolVersion != version || init.ServerInfo == nil || init.ServerInfo.Name != "mcp-runtime" {
		t.Errorf("negotiated %q with %+v, want %s with mcp-runtime", init.ProtocolVersion, init.ServerInfo, version)
	}
	if legacy == (cs.ID() == "") {
		t.Errorf("client session id %q in protocol %s", cs.ID(), version)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
		if strings.Contains(tool.Name, ".") {
			t.Errorf("exposed tool name %q contains a dot", tool.Name)
		}
	}
	if !names["runtime_echo"] || !names["runtime_info"] {
		t.Fatalf("tools/list = %v, want runtime_echo and runtime_info", names)
	}

	// Every built-in tool answers with the envelope (INV-MCP-RESP-001): the
	// same JSON as structuredContent and as the first text block.
	for _, name := range []string{"runtime_echo", "runtime.echo"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "héllo ✓"}})
		if err != nil {
			t.Fatalf("tools/call %s: %v", name, err)
		}
		env := envelope(t, res)
		if res.IsError || !env.Success || string(env.Data) != `{"text":"héllo ✓"}` || env.Metadata.DurationMs == nil {
			t.Errorf("tools/call %s = %+v", name, env)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "runtime_echo", Arguments: map[string]any{"text": 5}})
	if err != nil {
		t.Fatalf("tools/call with bad arguments: %v", err)
	}
	if env := envelope(t, res); !res.IsError || env.Success || env.Error.Code != "INVALID_INPUT" || !strings.Contains(env.Error.Message, "/text") {
		t.Errorf("bad arguments: want an INVALID_INPUT envelope naming /text, got %+v", env)
	}

	info, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "runtime_info"})
	if err != nil || info.IsError {
		t.Fatalf("runtime_info: %v %+v", err, info)
	}
	var doc struct {
		ProtocolVersion string `json:"protocolVersion"`
		ClientSessions  int    `json:"clientSessions"`
	}
	// A modern client has no client session to count.
	if env := envelope(t, info); json.Unmarshal(env.Data, &doc) != nil || (legacy && doc.ClientSessions < 1) || doc.ProtocolVersion != version {
		t.Errorf("runtime_info data = %s", env.Data)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runtime://info"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].MIMEType != "application/json" {
		t.Fatalf("resources/read runtime://info: %v %+v", err, read)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runtime://nope"}); err == nil {
		t.Error("reading an unknown resource succeeded")
	}
	if !legacy {
		return
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "runtime://info"}); err != nil {
		t.Errorf("resources/subscribe: %v", err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close (DELETE): %v", err)
	}
}

// TestAPI_RejectsForeignOriginAndHost checks the DNS-rebinding defences of
// the real wiring: loopback listener, default (localhost-only) origins.
func TestAPI_RejectsForeignOriginAndHost(t *testing.T) {
	url, _ := startServer(t, config.Default())
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name         string
		host, origin string
		want         int
	}{
		{"local", "", "http://localhost:3000", http.StatusOK},
		{"foreign origin", "", "https://evil.example.com", http.StatusForbidden},
		{"rebound host", "evil.example.com", "", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestRun_BadConfigNamesKey: a bad value stops start-up with the key named.
func TestRun_BadConfigNamesKey(t *testing.T) {
	env := map[string]string{"MCP_LOG_LEVEL": "loud"}
	err := run(context.Background(), nil, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "logLevel") {
		t.Fatalf("run with MCP_LOG_LEVEL=loud: err = %v, want one naming logLevel", err)
	}
}

type envelopeDoc struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   struct {
		Code, Message string
		Retryable     bool
		RetryAfterMs  int64 `json:"retryAfterMs"`
	}
	Metadata struct {
		DurationMs *int64 `json:"durationMs"`
		Truncated  bool   `json:"truncated"`
	} `json:"metadata"`
}

// envelope checks that structuredContent and the first text block carry
// the same envelope, and returns it.
func envelope(t *testing.T, res *mcp.CallToolResult) envelopeDoc {
	t.Helper()
	structured, _ := json.Marshal(res.StructuredContent)
	// State Sync may put its invalidation block first; the envelope is the
	// first block after it.
	blocks := res.Content
	if len(blocks) > 1 && strings.HasPrefix(blocks[0].(*mcp.TextContent).Text, "[System: ") {
		blocks = blocks[1:]
	}
	text := blocks[0].(*mcp.TextContent).Text
	var a, b envelopeDoc
	if err := json.Unmarshal(structured, &a); err != nil {
		t.Fatalf("structuredContent %s: %v", structured, err)
	}
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		t.Fatalf("first text block %q is not the envelope: %v", text, err)
	}
	// The client re-encodes structuredContent (a map: sorted keys), so
	// compare values, not bytes.
	var sa, sb any
	_ = json.Unmarshal(structured, &sa)
	_ = json.Unmarshal([]byte(text), &sb)
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("structuredContent %s and text %s differ", structured, text)
	}
	return b
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, testutil.Wait, "the condition", cond)
}

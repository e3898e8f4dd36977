package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// BenchmarkAPI_ToolsCall measures one tools/call of runtime_echo through the
// full request path of cmd/api (router, Origin/Host checks, session lookup,
// decode, schema validation, handler, encode, request log), without the
// network: the per-call CPU and allocations the server itself adds.
func BenchmarkAPI_ToolsCall(b *testing.B) {
	cfg := config.Default()
	a, err := newApp(context.Background(), cfg, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer a.logs.Close()
	post := func(sid, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		rec := httptest.NewRecorder()
		a.router.ServeHTTP(deadlineRecorder{rec}, req)
		return rec
	}
	init := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	sid := init.Header().Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime_echo","arguments":{"text":"hello"}}}`
	if rec := post(sid, call); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"text":"hello"`) {
		b.Fatalf("tools/call: %d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		post(sid, call)
	}
}

// deadlineRecorder accepts read and write deadlines as net/http's own
// ResponseWriter does; httptest's recorder reports them unsupported, which
// would add allocations (the error values) that a real server never makes.
type deadlineRecorder struct{ *httptest.ResponseRecorder }

func (deadlineRecorder) SetReadDeadline(time.Time) error  { return nil }
func (deadlineRecorder) SetWriteDeadline(time.Time) error { return nil }

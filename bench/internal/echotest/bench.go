package echotest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/lookup"
)

// BenchmarkToolsCall drives tools/call of tool with {"text":"hello"}
// through h in process (httptest, no network), after a handshake: the same
// harness as mcp-runtime's BenchmarkAPI_ToolsCall, so allocations per call
// compare directly.
func BenchmarkToolsCall(b *testing.B, h http.Handler, tool string) {
	benchmarkCall(b, h, tool, `{"text":"hello"}`, "hello")
}

// BenchmarkMemoryRetrieve drives tools/call of memory_retrieve of the
// seeded entry through h in process, as BenchmarkToolsCall does: the
// harness of mcp-runtime's BenchmarkAPI_MemoryRetrieveCached.
func BenchmarkMemoryRetrieve(b *testing.B, h http.Handler) {
	benchmarkCall(b, h, lookup.Tool, `{"key":"`+lookup.Key+`"}`, `"createdAt"`)
}

// benchmarkCall calls tool with args in the loop; want is in each answer.
func benchmarkCall(b *testing.B, h http.Handler, tool, args, want string) {
	post := func(sid, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	init := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	sid := init.Header().Get("Mcp-Session-Id")
	if init.Code != http.StatusOK {
		b.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	if rec := post(sid, call); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
		b.Fatalf("tools/call: %d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		post(sid, call)
	}
}

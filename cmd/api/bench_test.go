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

// benchClient drives cmd/api's router in process, without the network:
// one MCP session, one request at a time. Every BenchmarkAPI_* uses it, so
// their numbers differ only by what the server does for the call.
type benchClient struct {
	a   *app
	sid string
	// modern: the headers of a 2026-07-28 request; nil for the legacy
	// era's session.
	modern http.Header
}

// newBenchClient builds the app from cfg and performs the initialize
// handshake. The app is shut down (traces flushed, store closed) when b
// ends.
func newBenchClient(b *testing.B, cfg config.Config) *benchClient {
	b.Helper()
	a, err := newApp(context.Background(), cfg, io.Discard, noEnv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		a.abandon()
	})
	c := &benchClient{a: a}
	init := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	c.sid = init.Header().Get("Mcp-Session-Id")
	if c.sid == "" {
		b.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	return c
}

// post sends one JSON-RPC message on the session, or, when the client
// speaks the 2026-07-28 era (modern), a request of that era with its
// headers.
func (c *benchClient) post(body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.modern != nil {
		for k, v := range c.modern {
			req.Header[k] = v
		}
	} else {
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	rec := httptest.NewRecorder()
	c.a.router.ServeHTTP(deadlineRecorder{rec}, req)
	return rec
}

// mustPost sends body and fails b unless the answer is 200 and contains
// every one of want.
func (c *benchClient) mustPost(b *testing.B, body string, want ...string) *httptest.ResponseRecorder {
	b.Helper()
	rec := c.post(body)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
	}
	for _, w := range want {
		if !strings.Contains(rec.Body.String(), w) {
			b.Fatalf("%s: answer lacks %s: %s", body, w, rec.Body)
		}
	}
	return rec
}

// loop posts body b.N times, reporting allocations and the process's CPU
// time per call (cpu-µs/op: every goroutine's, the server's background
// work and the garbage collector included, which ns/op, a wall time, only
// shows when they run on the benchmark's own core).
func (c *benchClient) loop(b *testing.B, body string) {
	b.ReportAllocs()
	b.ResetTimer()
	start, ok := cpuTime()
	for b.Loop() {
		c.post(body)
	}
	if end, _ := cpuTime(); ok {
		b.ReportMetric(float64((end-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkAPI_ToolsCall measures one tools/call of runtime_echo through the
// full request path of cmd/api (router, Origin/Host checks, session lookup,
// decode, schema validation, handler, encode, request log), without the
// network: the per-call CPU and allocations the server itself adds.
func BenchmarkAPI_ToolsCall(b *testing.B) {
	c := newBenchClient(b, config.Default())
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime_echo","arguments":{"text":"hello"}}}`
	c.mustPost(b, call, `"text":"hello"`)
	c.loop(b, call)
}

// BenchmarkAPI_ToolsCallModern is BenchmarkAPI_ToolsCall in the
// 2026-07-28 era: no session, the client's _meta and headers checked on
// every request, the result decorated (resultType, serverInfo).
func BenchmarkAPI_ToolsCallModern(b *testing.B) {
	c := newBenchClient(b, config.Default())
	c.sid = ""
	c.modern = http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"runtime_echo"}}
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime_echo","arguments":{"text":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	c.mustPost(b, call, `"text":"hello"`, `"resultType":"complete"`)
	c.loop(b, call)
}

// BenchmarkAPI_MemoryRetrieveCached is BenchmarkAPI_ToolsCall for
// memory_retrieve of an entry the in-process cache holds: the cost of a
// cached read on top of the trivial tool's.
func BenchmarkAPI_MemoryRetrieveCached(b *testing.B) {
	c := newBenchClient(b, config.Default())
	c.mustPost(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_store","arguments":`+
		`{"key":"bench","value":{"text":"hello","n":1},"tags":["bench"]}}}`, `"version":1`)
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_retrieve","arguments":{"key":"bench"}}}`
	c.mustPost(b, call, `"text":"hello"`) // the store invalidated the key: this read fills the cache
	c.mustPost(b, call, `"cached":true`)
	c.loop(b, call)
}

// BenchmarkAPI_MemoryRetrieveCachedModern is
// BenchmarkAPI_MemoryRetrieveCached with a request of the 2026-07-28 era.
func BenchmarkAPI_MemoryRetrieveCachedModern(b *testing.B) {
	c := newBenchClient(b, config.Default())
	c.mustPost(b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_store","arguments":`+
		`{"key":"bench","value":{"text":"hello","n":1},"tags":["bench"]}}}`, `"version":1`)
	c.sid = ""
	c.modern = http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"memory_retrieve"}}
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_retrieve","arguments":{"key":"bench"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	c.mustPost(b, call, `"text":"hello"`, `"resultType":"complete"`)
	c.mustPost(b, call, `"cached":true`)
	c.loop(b, call)
}

// deadlineRecorder accepts read and write deadlines as net/http's own
// ResponseWriter does; httptest's recorder reports them unsupported, which
// would add allocations (the error values) that a real server never makes.
type deadlineRecorder struct{ *httptest.ResponseRecorder }

func (deadlineRecorder) SetReadDeadline(time.Time) error  { return nil }
func (deadlineRecorder) SetWriteDeadline(time.Time) error { return nil }

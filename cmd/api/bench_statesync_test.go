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

// BenchmarkAPI_StateSyncOverhead compares cmd/api with stateSync.enabled
// false and true, in process through the router (the harness of
// BenchmarkAPI_ToolsCall):
//
//   - echo: runtime_echo, a tool no policy invalidates. With State Sync
//     off nothing of it is on the call path; on, the after-call hook
//     resolves the tool's (cached) policy and returns. Same allocations.
//   - memory_store: a mutation. Off, the entry's own URI is still
//     published (the bus always runs; no subscriber here); on, the
//     invalidation block is prepended to the result and stale://memory.*
//     is published too: the added cost of an invalidating mutation.
func BenchmarkAPI_StateSyncOverhead(b *testing.B) {
	const (
		echo  = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime_echo","arguments":{"text":"hello"}}}`
		store = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_store","arguments":{"namespace":"bench","key":"k","value":{"text":"hello","n":1}}}}`
	)
	const block = "[System: Cache invalidated for memory.*"
	for _, tc := range []struct {
		tool, body, want string
	}{
		{"echo", echo, `"text":"hello"`},
		{"memory_store", store, `"success":true`},
	} {
		b.Run("tool="+tc.tool, func(b *testing.B) {
			for _, enabled := range []bool{false, true} {
				name := "stateSync=off"
				if enabled {
					name = "stateSync=on"
				}
				b.Run(name, func(b *testing.B) {
					cfg := config.Default()
					cfg.StateSync.Enabled = enabled
					s := newSSBenchClient(b, cfg)
					rec := s.post(tc.body)
					body := rec.Body.String()
					if rec.Code != http.StatusOK || !strings.Contains(body, tc.want) {
						b.Fatalf("%d %s", rec.Code, body)
					}
					// Only an enabled layer's invalidating mutation carries the block.
					if got, want := strings.Contains(body, block), enabled && tc.tool == "memory_store"; got != want {
						b.Fatalf("invalidation block present: %v, want %v: %s", got, want, body)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						s.post(tc.body)
					}
				})
			}
		})
	}
}

// ssBenchClient is BenchmarkAPI_ToolsCall's in-process client (one
// session, one request at a time, straight into the router), kept local
// so this file stands alone.
type ssBenchClient struct {
	a   *app
	sid string
}

func newSSBenchClient(b *testing.B, cfg config.Config) *ssBenchClient {
	b.Helper()
	a, err := newApp(context.Background(), cfg, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = a.transport.Close(context.Background())
		_ = a.state.close(context.Background())
		for _, c := range a.closers {
			c()
		}
		_ = a.logs.Close()
	})
	c := &ssBenchClient{a: a}
	init := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	c.sid = init.Header().Get("Mcp-Session-Id")
	if c.sid == "" {
		b.Fatalf("initialize: %d %s", init.Code, init.Body)
	}
	return c
}

func (c *ssBenchClient) post(body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	rec := httptest.NewRecorder()
	c.a.router.ServeHTTP(ssDeadlineRecorder{rec}, req)
	return rec
}

// ssDeadlineRecorder accepts write and read deadlines as net/http's
// ResponseWriter does (httptest's recorder reports them unsupported, with
// allocations a real server does not make).
type ssDeadlineRecorder struct{ *httptest.ResponseRecorder }

func (ssDeadlineRecorder) SetReadDeadline(time.Time) error  { return nil }
func (ssDeadlineRecorder) SetWriteDeadline(time.Time) error { return nil }

package main

import (
	"net/http"
	"strings"
	"testing"

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
					s := newBenchClient(b, cfg)
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

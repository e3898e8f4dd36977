package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// /metrics has what an operator graphs and alerts on (docs/adr/0029-metrics-at-scrape-time.md):
// requests by method and status, tool calls by tool, category and status
// with durations, sessions and streams, notifications, the cache, Redis
// degradations, the trace queue, upstream states.
func TestMetricsEndpoint(t *testing.T) {
	url, _ := runServer(t, config.Default(), io.Discard)
	cs := connect(t, url)
	mustSucceed(t, call(t, cs, "runtime_echo", map[string]any{"text": "hi"}), "runtime_echo")
	if env := call(t, cs, "memory_retrieve", map[string]any{"key": "absent"}); env.Success {
		t.Fatal("memory_retrieve of an absent key succeeded")
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`mcp_http_requests_total\{method="POST",status="200"\} [1-9]`,
		`mcp_tool_calls_total\{category="query",status="ok",tool="runtime.echo"\} 1`,
		`mcp_tool_calls_total\{category="query",status="NOT_FOUND",tool="memory.retrieve"\} 1`,
		`mcp_tool_call_duration_seconds_count\{category="query",tool="runtime.echo"\} 1`,
		`mcp_client_sessions [1-9]`,
		`mcp_sse_streams \d`,
		`mcp_notifications_published_total \d`,
		`mcp_notifications_waiting \d`,
		`mcp_cache_hits_total \d`,
		`mcp_cache_pressure_level 0`,
		`mcp_redis_degradations_total 0`,
		`mcp_trace_queue_dropped_total 0`,
		`mcp_traces_sampled_out_total 0`,
		`mcp_traces_evicted_total 0`,
		`mcp_traces_in_memory \d`,
		`mcp_connections_open [1-9]`,
		`mcp_connections_refused_total 0`,
		`mcp_auth_key_lookups_total 0`,
		`mcp_auth_address_limited_total 0`,
		`go_goroutines \d`,
	} {
		if !regexp.MustCompile(`(?m)^` + want).MatchString(text) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

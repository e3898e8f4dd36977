package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil/otlptest"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// One agent's calls followed end to end through OpenTelemetry: a client
// sends tools/call with a traceparent in _meta to a gateway on
// PostgreSQL and Redis, whose upstream is a second cmd/api, both
// exporting to one OTLP receiver. The spans share the client's trace and
// form the tree: the gateway's server span under the client's span, the
// guardrails under it, the store's PostgreSQL and Redis spans, the
// client span of the proxied call and the upstream's own server span
// under that. No span carries a value the client stored or its session
// id.
func TestTelemetry_EndToEnd(t *testing.T) {
	const (
		clientTrace = "0af7651916cd43dd8448eb211c80319c"
		clientSpan  = "b7ad6b7169203331"
		secret      = "value-that-must-not-leave"
	)
	rcv, endpoint := otlptest.Start(t, otlptest.HTTP)
	env := func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return endpoint
		}
		return ""
	}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	_, upURL, stopUp := serveAppEnv(t, config.Default(), io.Discard, listen(), env)
	cfg := config.Default()
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.RedisURL = "redis://" + redistest.Shared(t) + "/0"
	cfg.Redis.KeyPrefix = "otel-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000") + ":"
	cfg.Upstreams = []upstream.Config{{ID: "up", URL: upURL}}
	_, url, stopGateway := serveAppEnv(t, cfg, io.Discard, listen(), env)

	cs := connect(t, url)
	waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "up_memory_store") })
	call := func(name string, args map[string]any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args,
			Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call %s: %v %v", name, err, res)
		}
	}
	call("memory_store", map[string]any{"key": "k", "value": secret})
	call("memory_retrieve", map[string]any{"key": "k"})
	call("up_memory_store", map[string]any{"key": "k", "value": secret})
	// The project's own trace of the call names the OpenTelemetry trace.
	waitFor(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trace_list", Arguments: map[string]any{"tool": "memory.store"}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			return false
		}
		text, _ := res.Content[0].(*mcp.TextContent)
		return text != nil && strings.Contains(text.Text, `"otelTraceId":"`+clientTrace+`"`)
	})
	// The tool-call histogram carries the trace as an exemplar, in the
	// OpenMetrics format Prometheus asks for.
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metricsText), `trace_id="`+clientTrace+`"`) {
		t.Errorf("no exemplar of trace %s in /metrics (%s)", clientTrace, resp.Header.Get("Content-Type"))
	}
	sid := cs.ID()
	if err := cs.Close(); err != nil { // DELETE: the session's end is measured
		t.Fatal(err)
	}
	stopGateway() // flushes what the gateway buffered
	stopUp()

	spans := map[string]otlptest.Span{}
	var inTrace []otlptest.Span
	for _, sp := range rcv.Spans() {
		if otlptest.TraceID(sp.Span) != clientTrace {
			continue
		}
		inTrace = append(inTrace, sp)
		spans[otlptest.SpanID(sp.Span)] = sp
		for k, v := range otlptest.Attrs(sp.Span) {
			if strings.Contains(v, secret) || (sid != "" && strings.Contains(v, sid)) {
				t.Errorf("span %q attribute %s=%q carries a stored value or the session id", sp.GetName(), k, v)
			}
		}
	}
	t.Logf("the trace:\n%s", spanTree(inTrace, clientSpan))
	// under reports whether sp descends from the span with id ancestor.
	under := func(sp otlptest.Span, ancestor string) bool {
		for p := otlptest.ParentID(sp.Span); p != ""; {
			if p == ancestor {
				return true
			}
			parent, ok := spans[p]
			if !ok {
				return false
			}
			p = otlptest.ParentID(parent.Span)
		}
		return false
	}
	find := func(what string, match func(otlptest.Span) bool) otlptest.Span {
		t.Helper()
		for _, sp := range inTrace {
			if match(sp) {
				return sp
			}
		}
		var names []string
		for _, sp := range inTrace {
			names = append(names, sp.GetName()+"("+sp.GetKind().String()+")")
		}
		t.Fatalf("no %s among the trace's spans %v", what, names)
		return otlptest.Span{}
	}
	server := func(name string) func(otlptest.Span) bool {
		return func(sp otlptest.Span) bool {
			return sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER && sp.GetName() == name && otlptest.ParentID(sp.Span) == clientSpan
		}
	}
	store := find("gateway server span of memory_store", server("tools/call memory_store"))
	retrieve := find("gateway server span of memory_retrieve", server("tools/call memory_retrieve"))
	proxied := find("gateway server span of up_memory_store", server("tools/call up_memory_store"))
	for _, g := range []string{mcpconv.SpanRateLimit, mcpconv.SpanMemoryGate, mcpconv.SpanLimits, mcpconv.SpanTimeout} {
		find(g+" under memory_store", func(sp otlptest.Span) bool { return sp.GetName() == g && under(sp, otlptest.SpanID(store.Span)) })
	}
	find("a PostgreSQL span under memory_store", func(sp otlptest.Span) bool {
		return dbSystem(sp) == "postgresql" && under(sp, otlptest.SpanID(store.Span))
	})
	find("a Redis span under memory_store or memory_retrieve", func(sp otlptest.Span) bool {
		return dbSystem(sp) == "redis" &&
			(under(sp, otlptest.SpanID(store.Span)) || under(sp, otlptest.SpanID(retrieve.Span)))
	})
	client := find("the upstream call's client span", func(sp otlptest.Span) bool {
		return sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && sp.GetName() == "tools/call memory_store" && under(sp, otlptest.SpanID(proxied.Span))
	})
	find("the upstream's own server span", func(sp otlptest.Span) bool {
		return sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER && sp.GetName() == "tools/call memory_store" && otlptest.ParentID(sp.Span) == otlptest.SpanID(client.Span)
	})
	// State Sync's delivery of memory_store's update is a trace of its
	// own, linked to the mutation's.
	linked := false
	for _, sp := range rcv.Spans() {
		for _, l := range sp.GetLinks() {
			if sp.GetKind() == tracepb.Span_SPAN_KIND_PRODUCER && sp.GetName() == "notifications/resources/updated" &&
				hex.EncodeToString(l.GetTraceId()) == clientTrace && under(spans[hex.EncodeToString(l.GetSpanId())], otlptest.SpanID(store.Span)) {
				linked = true
			}
		}
	}
	if !linked {
		t.Error("no delivery span of memory_store's update linked to the mutation")
	}
	// The conventions' duration metrics, exported when each server stopped.
	for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration", "mcp.server.session.duration"} {
		if !rcv.HasMetric(name) {
			t.Errorf("no %s among the metrics received: %v", name, rcv.Metrics())
		}
	}
}

// dbSystem is a client span's database, under the semantic conventions'
// current attribute name or the earlier one.
func dbSystem(sp otlptest.Span) string {
	a := otlptest.Attrs(sp.Span)
	if v := a["db.system.name"]; v != "" {
		return v
	}
	return a["db.system"]
}

// spanTree draws the spans under parent, one a line, indented by depth:
// name, kind and service.
func spanTree(spans []otlptest.Span, parent string) string {
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, sp := range spans {
			if otlptest.ParentID(sp.Span) == parent {
				fmt.Fprintf(&b, "%s%s (%s, %s)\n", strings.Repeat("  ", depth), sp.GetName(),
					strings.ToLower(strings.TrimPrefix(sp.GetKind().String(), "SPAN_KIND_")), sp.Service)
				walk(otlptest.SpanID(sp.Span), depth+1)
			}
		}
	}
	walk(parent, 0)
	return b.String()
}

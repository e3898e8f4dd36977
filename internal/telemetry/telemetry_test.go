package telemetry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil/otlptest"
)

func noEnv(string) string { return "" }

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
)

func paramsWith(traceparent string) json.RawMessage {
	return json.RawMessage(`{"name":"echo","_meta":{"progressToken":1,"traceparent":"` + traceparent + `","tracestate":"vendor=x"}}`)
}

// Off, nothing is done: no context read, nothing written, nothing sent.
func TestOff(t *testing.T) {
	tel, err := Setup(context.Background(), Config{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if tel.Enabled() {
		t.Fatal("enabled without an endpoint")
	}
	ctx := context.Background()
	if got := tel.Extract(ctx, paramsWith("00-"+clientTrace+"-"+clientParent+"-01"), nil); got != ctx {
		t.Fatal("Extract changed the context while off")
	}
	ctx, op := tel.StartServer(ctx, "tools/call", "echo")
	op.End(ctx, "")
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	off, _ := Setup(context.Background(), Config{Endpoint: "http://127.0.0.1:1"}, func(k string) string {
		if k == "OTEL_SDK_DISABLED" {
			return "true"
		}
		return ""
	})
	if off.Enabled() {
		t.Fatal("OTEL_SDK_DISABLED=true did not turn it off")
	}
}

// A client's trace continues through the server span into the client
// span of an upstream call, whichever protocol exports them.
func TestTraceContinues(t *testing.T) {
	for _, protocol := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			r, endpoint := otlptest.Start(t, protocol)
			tel, err := Setup(context.Background(), Config{Endpoint: endpoint, Protocol: protocol}, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			hdr := http.Header{}
			hdr.Set("traceparent", "00-"+strings.Repeat("1", 32)+"-"+strings.Repeat("2", 16)+"-01")
			ctx := tel.Extract(context.Background(), paramsWith("00-"+clientTrace+"-"+clientParent+"-01"), hdr)
			ctx, server := tel.StartServer(ctx, "tools/call", "echo", mcpconv.Tenant.String("team-a"))
			cctx, client := tel.StartClient(ctx, "tools/call", "echo")
			client.End(cctx, "")
			server.End(ctx, "-32602")
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			var srv, cli *tracepb.Span
			for _, sp := range r.Spans() {
				switch sp.GetKind() {
				case tracepb.Span_SPAN_KIND_SERVER:
					srv = sp.Span
				case tracepb.Span_SPAN_KIND_CLIENT:
					cli = sp.Span
				}
			}
			if srv == nil || cli == nil {
				t.Fatalf("spans %v", r.Spans())
			}
			if hex.EncodeToString(srv.GetTraceId()) != clientTrace || hex.EncodeToString(srv.GetParentSpanId()) != clientParent {
				t.Fatalf("server span in trace %x under %x; want the client's from _meta", srv.GetTraceId(), srv.GetParentSpanId())
			}
			if hex.EncodeToString(cli.GetTraceId()) != clientTrace || string(cli.GetParentSpanId()) != string(srv.GetSpanId()) {
				t.Fatal("the upstream call's span is not the server span's child")
			}
			if got := otlptest.Attrs(srv); got["mcp.method.name"] != "tools/call" || got["gen_ai.tool.name"] != "echo" || got["mcp_runtime.tenant"] != "team-a" || got["error.type"] != "-32602" {
				t.Fatalf("server span attributes %v", got)
			}
			if srv.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Fatal("a failed operation's span is not marked failed")
			}
			if !r.HasMetric("mcp.server.operation.duration") || !r.HasMetric("mcp.client.operation.duration") {
				t.Fatalf("metrics received: %v", r.Metrics())
			}
		})
	}
}

// _meta wins over the headers, and a broken _meta value gives way to them.
func TestExtractOrder(t *testing.T) {
	_, endpoint := otlptest.Start(t, otlptest.HTTP)
	tel, err := Setup(context.Background(), Config{Endpoint: endpoint}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	header := "00-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-01"
	hdr := http.Header{}
	hdr.Set("Traceparent", header)
	tests := []struct {
		name   string
		params json.RawMessage
		want   string
	}{
		{"_meta first", paramsWith("00-" + clientTrace + "-" + clientParent + "-01"), clientTrace},
		{"a malformed _meta value", paramsWith("00-zz-yy-01"), strings.Repeat("a", 32)},
		{"no _meta", json.RawMessage(`{"name":"echo"}`), strings.Repeat("a", 32)},
		{"_meta not an object", json.RawMessage(`{"_meta":"traceparent"}`), strings.Repeat("a", 32)},
		{"no params", nil, strings.Repeat("a", 32)},
	}
	for _, tt := range tests {
		ctx := tel.Extract(context.Background(), tt.params, hdr)
		if got := traceOf(ctx); got != tt.want {
			t.Errorf("%s: trace %s, want %s", tt.name, got, tt.want)
		}
	}
}

// The stores' instrumentation starts spans only inside a recorded one:
// the server's own background queries make no root traces, and ending
// what it got back outside a span ends nothing of the caller's.
func TestChildTracerProvider(t *testing.T) {
	_, endpoint := otlptest.Start(t, otlptest.HTTP)
	tel, err := Setup(context.Background(), Config{Endpoint: endpoint}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	child := tel.ChildTracerProvider().Tracer("db")
	if _, sp := child.Start(context.Background(), "SELECT"); sp.IsRecording() {
		t.Fatal("a span with no parent was recorded")
	}
	ctx, parent := tel.Tracer().Start(context.Background(), "tools/call echo")
	cctx, sp := child.Start(ctx, "SELECT")
	if !sp.IsRecording() || trace.SpanFromContext(cctx).SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Fatal("no child span under a recorded one")
	}
	sp.End()
	if !parent.IsRecording() {
		t.Fatal("ending the child ended the parent")
	}
}

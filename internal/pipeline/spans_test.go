package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
)

// The guardrails of a traced call are child spans of its span — the rate
// limit, the limits and gates, the run under its deadline — and the one
// that answered a call is marked failed with the envelope's code, which
// the call's span carries too, with the call's trace id in its record.
// An untraced call makes no span at all.
func TestGuardrailSpans(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	tracer := tp.Tracer("test")
	var recs []CallRecord
	cfg := Config{Limits: limits.DefaultConfig(), Timeouts: timeout.DefaultConfig(), Response: response.DefaultLimits(), Separator: "_",
		Record: func(r CallRecord) { recs = append(recs, r) }, Tracer: tracer,
		Admit: func(context.Context, string) *response.Error { return nil }}
	p, err := New[*call](cfg, guard.NewPolicy(zerolog.Nop(), 0, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Wrap(Tool[*call]{Name: "test.echo", Category: timeout.Query,
		Run: func(_ context.Context, c *call) (any, error) { return c.args, nil }})
	if err != nil {
		t.Fatal(err)
	}
	// The same tool while memory pressure is critical: the memory gate
	// answers, and no limit is checked.
	pressed, err := New[*call](cfg, guard.NewPolicy(zerolog.Nop(), 0, func() guard.Pressure { return guard.PressureCritical }), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	gp, err := pressed.Wrap(Tool[*call]{Name: "test.echo", Category: timeout.Query,
		Run: func(_ context.Context, c *call) (any, error) { return c.args, nil }})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		g          Guarded[*call]
		name, args string
		traced     bool
		want       []string // child span names, in the order they end
		failed     string   // the guardrail span marked failed, and the code
		code       string
	}{
		{g, "traced success", `{"text":"hi"}`, true, []string{mcpconv.SpanRateLimit, mcpconv.SpanMemoryGate, mcpconv.SpanLimits, mcpconv.SpanTimeout}, "", ""},
		{g, "traced rejection", `{"items":[` + strings.TrimSuffix(strings.Repeat("1,", 101), ",") + `]}`, true,
			[]string{mcpconv.SpanRateLimit, mcpconv.SpanMemoryGate, mcpconv.SpanLimits}, mcpconv.SpanLimits, string(response.CodeArrayTooLarge)},
		{gp, "rejected under memory pressure", `{"text":"hi"}`, true,
			[]string{mcpconv.SpanRateLimit, mcpconv.SpanMemoryGate}, mcpconv.SpanMemoryGate, string(response.CodeMemoryPressure)},
		{g, "untraced", `{"text":"hi"}`, false, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs = nil
			before := len(spans.Ended())
			ctx := context.Background()
			server := trace.SpanFromContext(ctx) // non-recording until started
			if tt.traced {
				ctx, server = tracer.Start(ctx, "tools/call test_echo")
			}
			c := &call{name: "test.echo", args: json.RawMessage(tt.args)}
			if res := tt.g.Precheck(ctx, c); res == nil {
				if _, err := tt.g.Handler(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, sp := range spans.Ended()[before:] {
				got = append(got, sp.Name())
				if sp.Parent().SpanID() != server.SpanContext().SpanID() {
					t.Errorf("%s is not a child of the call's span", sp.Name())
				}
				if failed := sp.Status().Code == codes.Error; failed != (sp.Name() == tt.failed) {
					t.Errorf("%s: status %v", sp.Name(), sp.Status())
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("guardrail spans %v, want %v", got, tt.want)
			}
			if !tt.traced {
				if recs[0].TraceID != "" {
					t.Errorf("untraced call recorded with trace %q", recs[0].TraceID)
				}
				return
			}
			server.End()
			last := spans.Ended()[len(spans.Ended())-1]
			attrs := map[string]string{}
			for _, kv := range last.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if attrs["mcp_runtime.error.code"] != tt.code || attrs["mcp_runtime.tool.is_error"] != map[bool]string{false: "false", true: "true"}[tt.code != ""] {
				t.Errorf("call span attributes %v, want error code %q", attrs, tt.code)
			}
			if recs[0].TraceID != server.SpanContext().TraceID().String() {
				t.Errorf("record's trace %q, want %s", recs[0].TraceID, server.SpanContext().TraceID())
			}
		})
	}
}

package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
)

// Operation is one MCP message handled or sent: its span and, when it
// ends, its duration metric.
type Operation struct {
	t      *Telemetry
	span   trace.Span
	start  time.Time
	client bool
	attrs  []attribute.KeyValue // those the duration metric carries
}

// StartServer starts the server span of an incoming MCP request or
// notification; target is the tool or prompt name, or "".
func (t *Telemetry) StartServer(ctx context.Context, method, target string, attrs ...attribute.KeyValue) (context.Context, Operation) {
	return t.start(ctx, trace.SpanKindServer, method, target, attrs)
}

// StartClient starts the client span of a request to an upstream server.
func (t *Telemetry) StartClient(ctx context.Context, method, target string, attrs ...attribute.KeyValue) (context.Context, Operation) {
	return t.start(ctx, trace.SpanKindClient, method, target, attrs)
}

func (t *Telemetry) start(ctx context.Context, kind trace.SpanKind, method, target string, attrs []attribute.KeyValue) (context.Context, Operation) {
	op := Operation{t: t, client: kind == trace.SpanKindClient}
	if !t.enabled {
		op.span = trace.SpanFromContext(ctx) // non-recording: no allocation of a span
		return ctx, op
	}
	base := []attribute.KeyValue{mcpconv.MethodName.String(method)}
	switch method {
	case "tools/call":
		if target != "" {
			base = append(base, mcpconv.ToolName.String(target))
		}
	case "prompts/get":
		if target != "" {
			base = append(base, mcpconv.PromptName.String(target))
		}
	}
	op.attrs, op.start = base, time.Now()
	ctx, op.span = t.tracer.Start(ctx, mcpconv.SpanName(method, target), trace.WithSpanKind(kind), trace.WithAttributes(append(base, attrs...)...))
	return ctx, op
}

// Span is the operation's span (non-recording when off).
func (o Operation) Span() trace.Span { return o.span }

// End ends the operation: errType (a JSON-RPC error code, an envelope
// code, "timeout" …) marks it failed when not empty.
func (o Operation) End(ctx context.Context, errType string) {
	if !o.t.enabled {
		return
	}
	attrs := o.attrs
	if errType != "" {
		attrs = append(attrs, mcpconv.ErrorType.String(errType))
	}
	o.EndSpan(errType)
	h := o.t.metrics.serverOp
	if o.client {
		h = o.t.metrics.clientOp
	}
	h.Record(ctx, time.Since(o.start).Seconds(), metric.WithAttributes(attrs...))
}

// EndSpan ends the operation's span only, failed when errType is not
// empty: for an operation whose duration is no MCP operation's (the
// opening of a stream, which the duration metric would mix with calls).
func (o Operation) EndSpan(errType string) {
	if !o.t.enabled {
		return
	}
	if errType != "" {
		o.span.SetAttributes(mcpconv.ErrorType.String(errType))
		o.span.SetStatus(codes.Error, errType)
	}
	o.span.End()
}

// RecordClientCall records a request sent to another server that was not
// made through StartClient (mcp.client.operation.duration): method and
// target as StartClient takes them, errType "" for a success.
func (t *Telemetry) RecordClientCall(ctx context.Context, method, target string, d time.Duration, errType string) {
	if !t.enabled {
		return
	}
	attrs := []attribute.KeyValue{mcpconv.MethodName.String(method)}
	if target != "" {
		attrs = append(attrs, mcpconv.ToolName.String(target))
	}
	if errType != "" {
		attrs = append(attrs, mcpconv.ErrorType.String(errType))
	}
	t.metrics.clientOp.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
}

// RecordSession records a client session's duration when it ends
// (mcp.server.session.duration).
func (t *Telemetry) RecordSession(ctx context.Context, d time.Duration, protocolVersion string) {
	if !t.enabled {
		return
	}
	t.metrics.serverSession.Record(ctx, d.Seconds(), metric.WithAttributes(mcpconv.ProtocolVersion.String(protocolVersion)))
}

// instruments are the conventions' duration histograms.
type instruments struct {
	serverOp, clientOp, serverSession metric.Float64Histogram
}

func (in *instruments) init(m metric.Meter) error {
	var err error
	if in.serverOp, err = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.")); err != nil {
		return err
	}
	if in.clientOp, err = m.Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.")); err != nil {
		return err
	}
	in.serverSession, err = m.Float64Histogram("mcp.server.session.duration", metric.WithUnit("s"),
		metric.WithDescription("The duration of the MCP session as observed on the MCP server."))
	return err
}

// durationView gives the operation histograms the conventions' bucket
// boundaries (seconds).
func durationView() sdkmetric.View {
	return sdkmetric.NewView(
		sdkmetric.Instrument{Name: "mcp.*.operation.duration"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
			Boundaries: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
		}},
	)
}

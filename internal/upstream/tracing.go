package upstream

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
)

// Trace context reaches an upstream in both places a server may read it
// (gen-ai/mcp, "Context propagation"): the request's params._meta, which
// survives a message that is not one HTTP request, and the W3C headers
// (docs/adr/0046-opentelemetry.md). Only Trace Context: baggage is the
// client's, and a gateway does not forward it to every server behind it.

// AttrUpstream is the id of the upstream server a client span calls.
const AttrUpstream = "mcp_runtime.upstream"

// startCall starts the client span of a tools/call to serverID when ctx's
// span is recording; otherwise it returns ctx and nil.
func (m *Manager) startCall(ctx context.Context, serverID, tool string) (context.Context, trace.Span) {
	if m.opts.Tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	return m.opts.Tracer.Start(ctx, mcpconv.SpanName(protocol.MethodToolsCall, tool), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(mcpconv.MethodName.String(protocol.MethodToolsCall), mcpconv.ToolName.String(tool),
			attribute.String(AttrUpstream, serverID)))
}

// endCall ends a client span (nil: none): failed with the upstream's
// error, or as a tool error when the server answered isError.
func endCall(span trace.Span, res CallResult, err error) {
	if span == nil {
		return
	}
	switch {
	case err != nil:
		kind := "upstream_error"
		var e *Error
		if errors.As(err, &e) && e.Kind != nil {
			kind = e.Kind.Error()
		}
		span.SetAttributes(mcpconv.ErrorType.String(kind))
		span.SetStatus(codes.Error, kind)
	case res.IsError:
		span.SetAttributes(mcpconv.ErrorType.String("tool_error"))
	}
	span.End()
}

// traceMeta is the trace context of ctx as _meta members, or nil when ctx
// carries none.
func traceMeta(ctx context.Context) propagation.MapCarrier {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c
}

// appendTraceMeta appends ctx's trace context to a _meta object being
// written by hand, each member preceded by a comma.
func appendTraceMeta(dst []byte, ctx context.Context) []byte {
	for k, v := range traceMeta(ctx) {
		dst = append(dst, ',')
		dst = protocol.AppendString(dst, k)
		dst = append(dst, ':')
		dst = protocol.AppendString(dst, v)
	}
	return dst
}

// injectHeaders sets ctx's trace context on h.
func injectHeaders(ctx context.Context, h http.Header) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}

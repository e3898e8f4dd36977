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
// (docs/adr/0046-opentelemetry.md) — only when tracing is on
// (dialParams.propagate), and only to the server itself, not to where it
// redirects. Only Trace Context: baggage is the client's, and a gateway
// does not forward it to every server behind it.

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
func endCall(span trace.Span, errType string, failed bool) {
	if span == nil {
		return
	}
	if errType != "" {
		span.SetAttributes(mcpconv.ErrorType.String(errType))
	}
	if failed {
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// callErrType is error.type of a call's outcome (gen-ai/mcp): the kind
// of the upstream's error, "tool_error" for an isError answer, "" for a
// success; failed reports an error (not a tool's isError).
func callErrType(res CallResult, err error) (errType string, failed bool) {
	switch {
	case err != nil:
		var e *Error
		if errors.As(err, &e) && e.Kind != nil {
			return e.Kind.Error(), true
		}
		return "upstream_error", true
	case res.IsError:
		return "tool_error", false
	}
	return "", false
}

// Keys of trace context in _meta and the headers (W3C Trace Context).
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// maxTracestate is the longest tracestate passed on: W3C asks vendors to
// pass on at least 512 bytes, and a client's longer one must not make the
// gateway send large headers to every upstream.
const maxTracestate = 512

// traceContext is ctx's trace context as W3C's traceparent and
// tracestate ("" when ctx carries none, or a tracestate too long).
func traceContext(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	traceparent, tracestate = c[metaTraceparent], c[metaTracestate]
	if len(tracestate) > maxTracestate {
		tracestate = ""
	}
	return traceparent, tracestate
}

// appendTraceMeta appends ctx's trace context to a _meta object being
// written by hand, traceparent first; more says a member precedes them.
func appendTraceMeta(dst []byte, ctx context.Context, more bool) []byte {
	tp, ts := traceContext(ctx)
	for _, m := range [2][2]string{{metaTraceparent, tp}, {metaTracestate, ts}} {
		if m[1] == "" {
			continue
		}
		if more {
			dst = append(dst, ',')
		}
		more = true
		dst = protocol.AppendString(dst, m[0])
		dst = append(dst, ':')
		dst = protocol.AppendString(dst, m[1])
	}
	return dst
}

// injectHeaders sets ctx's trace context on h.
func injectHeaders(ctx context.Context, h http.Header) {
	tp, ts := traceContext(ctx)
	if tp != "" {
		h.Set(metaTraceparent, tp)
	}
	if ts != "" {
		h.Set(metaTracestate, ts)
	}
}

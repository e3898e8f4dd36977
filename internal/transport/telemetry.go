package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// serverOp starts the server span of one incoming MCP message — a span per
// MCP request or notification, not per HTTP request (gen-ai/mcp) — named
// method, which the caller has passed through spanMethod, and whose
// parent is the trace context of the message's params._meta, else of the
// HTTP headers. tool is the exposed name of a known tool ("" otherwise),
// session the client session's handle (ClientSession.handle; never its
// id, a credential). Off, it costs a nil check.
func (t *Transport) serverOp(ctx context.Context, h http.Header, method string, id []byte, params json.RawMessage, tool, session, version string, rec *requestLog) (context.Context, telemetry.Operation) {
	if !t.tel.Enabled() {
		return ctx, telemetry.Operation{}
	}
	ctx = t.tel.Extract(ctx, params, h)
	ctx, op := t.tel.StartServer(ctx, method, tool)
	sp := op.Span()
	if !sp.IsRecording() {
		// Unsampled: the duration metric still counts it, but nothing
		// is spent on attributes no one will read.
		return ctx, op
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, mcpconv.Tenant.String(tenant.From(ctx)))
	if len(id) > 0 {
		// The client's to choose, up to the body limit: bounded as in the
		// log line.
		attrs = append(attrs, mcpconv.RequestID.String(logging.Field(unquote(id))))
	}
	if session != "" {
		attrs = append(attrs, mcpconv.SessionID.String(session))
	}
	if version != "" {
		attrs = append(attrs, mcpconv.ProtocolVersion.String(version))
	}
	sp.SetAttributes(attrs...)
	if sc := sp.SpanContext(); sc.IsSampled() {
		rec.trace = sc // the log line names only traces that are exported
	}
	return ctx, op
}

// clientOp starts the client span of a request this server sends its
// client (sampling, elicitation, roots: gen-ai/mcp counts each as an MCP
// request), under the handler's span, and returns params with the span's
// trace context in their _meta, so that a client that traces continues
// the trace; end ends the span with the request's outcome. Off, or under
// no recorded span, params are returned as they are.
func (t *Transport) clientOp(ctx context.Context, method string, params []byte) (context.Context, []byte, func(error)) {
	if !t.tel.Enabled() || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, params, func(error) {}
	}
	ctx, op := t.tel.StartClient(ctx, spanMethod(method), "")
	return ctx, withTraceMeta(ctx, params), func(err error) {
		errType := ""
		if err != nil {
			errType = "client_error"
		}
		op.End(ctx, errType)
	}
}

// withTraceMeta returns params, a JSON object, with ctx's traceparent and
// tracestate in a _meta member it adds; params that have a _meta already
// (none of the server's requests does) are returned as they are.
func withTraceMeta(ctx context.Context, params []byte) []byte {
	var meta [1]json.RawMessage
	params = bytes.TrimSpace(params)
	if len(params) < 2 || params[0] != '{' || params[len(params)-1] != '}' ||
		protocol.LookupMembers(params, []string{"_meta"}, meta[:]) != nil || meta[0] != nil {
		return params
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	out := make([]byte, 0, len(params)+160)
	out = append(out, params[:len(params)-1]...) // without its closing brace
	if len(bytes.TrimSpace(params[1:len(params)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"_meta":{`...)
	for i, k := range []string{"traceparent", "tracestate"} {
		if c[k] == "" {
			continue
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = protocol.AppendString(out, k)
		out = append(out, ':')
		out = protocol.AppendString(out, c[k])
	}
	return append(out, "}}"...)
}

// sessionEnded records the life of a client session that ended here —
// its client's DELETE, or the idle sweep of the in-memory store
// (mcp.server.session.duration). A session dropped from this replica
// while it lives on (a shared copy evicted, a replica shutting down) did
// not end, and one that expires in Redis is not seen ending by any
// replica: neither is counted.
func (t *Transport) sessionEnded(s *ClientSession) {
	if t.tel.Enabled() {
		t.tel.RecordSession(context.Background(), s.Lived(t.now()), s.version)
	}
}

// cause is the span of ctx when it is sampled and tracing is on: what an
// event published to the other replicas carries for their deliveries to
// link to.
func (t *Transport) cause(ctx context.Context) trace.SpanContext {
	if !t.tel.Enabled() {
		return trace.SpanContext{}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		return sc
	}
	return trace.SpanContext{}
}

// busDeliverySpan starts the span of this replica's delivery of an event
// another replica published: a consumer span of a trace of its own,
// linked to that replica's delivery. Without a cause, a span that
// records nothing.
func (t *Transport) busDeliverySpan(ev ListenEvent) trace.Span {
	if !ev.Cause.IsValid() || !t.tel.Enabled() {
		return trace.SpanFromContext(context.Background())
	}
	kind, _, _ := strings.Cut(ev.URI, "://") // the URI is the client's entity: its kind only
	_, span := t.tel.Tracer().Start(context.Background(), ev.Method, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(trace.Link{SpanContext: ev.Cause}),
		trace.WithAttributes(mcpconv.MethodName.String(ev.Method), mcpconv.Tenant.String(ev.Tenant), mcpconv.ResourceKind.String(kind)))
	return span
}

// spanMethod is method as a span's name and the duration metric's label
// take it: one of MCP's methods, or "_OTHER" (gen-ai/mcp, as the
// conventions for HTTP methods do). The client chooses the method, up to
// the body limit: as a name or a label it would make series and spans of
// megabytes, one per string.
func spanMethod(method string) string {
	switch method {
	case protocol.MethodInitialize, protocol.MethodPing, protocol.MethodToolsList, protocol.MethodToolsCall,
		protocol.MethodResourcesList, protocol.MethodResourcesRead, protocol.MethodResourcesTemplatesList,
		protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe, protocol.MethodPromptsList,
		protocol.MethodPromptsGet, protocol.MethodLoggingSetLevel, protocol.MethodCompletionComplete,
		protocol.MethodServerDiscover, protocol.MethodSubscriptionsListen,
		protocol.MethodSamplingCreateMessage, protocol.MethodElicitationCreate, protocol.MethodRootsList,
		protocol.NotificationInitialized, protocol.NotificationCancelled, protocol.NotificationProgress,
		protocol.NotificationRootsListChanged:
		return method
	}
	return "_OTHER"
}

// endOp ends the span serverOp started, with the outcome the request's
// log line records: a JSON-RPC error's code, or a tool's isError result
// (the guardrails put the envelope's code on the span).
func (t *Transport) endOp(ctx context.Context, op telemetry.Operation, rec *requestLog) {
	if !t.tel.Enabled() {
		return
	}
	op.End(ctx, t.errType(op, rec))
}

// endStreamOp ends the span of a request that opens a stream (a GET, a
// subscriptions/listen) once the stream is handed on: its duration is
// no operation's, so the duration metric does not take it.
func (t *Transport) endStreamOp(op telemetry.Operation, rec *requestLog) {
	if !t.tel.Enabled() {
		return
	}
	op.EndSpan(t.errType(op, rec))
}

// errType is error.type of a request as its log line records it: a
// JSON-RPC error's code, a tool's isError, or an HTTP status over 399
// when there is neither (a GET refused).
func (t *Transport) errType(op telemetry.Operation, rec *requestLog) string {
	switch {
	case rec.rpcCode != 0:
		op.Span().SetAttributes(mcpconv.RPCErrorCode.Int(rec.rpcCode))
		return strconv.Itoa(rec.rpcCode)
	case rec.toolError:
		return "tool_error" // gen-ai/mcp: a CallToolResult with isError
	case rec.status >= http.StatusBadRequest:
		return strconv.Itoa(rec.status)
	}
	return ""
}

// unquote is a JSON-RPC id as text: a string id without its quotes.
func unquote(id []byte) string {
	if len(id) >= 2 && id[0] == '"' {
		if s, err := strconv.Unquote(string(id)); err == nil {
			return s
		}
	}
	return string(id)
}

// logTrace adds the ids of the request's span to its log line.
func logTrace(sc trace.SpanContext) (traceID, spanID string, ok bool) {
	if !sc.IsValid() {
		return "", "", false
	}
	return sc.TraceID().String(), sc.SpanID().String(), true
}

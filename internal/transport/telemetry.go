package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// serverOp starts the server span of one incoming MCP message — a span per
// MCP request or notification, not per HTTP request (gen-ai/mcp) — whose
// parent is the trace context of the message's params._meta, else of the
// HTTP headers. tool is the exposed name of a known tool ("" otherwise),
// sid the client session's id, which the span carries only as its
// handle (store.ClientSessionHandle): the id is a credential. Off, it
// costs a nil check.
func (t *Transport) serverOp(ctx context.Context, h http.Header, method string, id []byte, params json.RawMessage, tool, sid, version string, rec *requestLog) (context.Context, telemetry.Operation) {
	if !t.tel.Enabled() {
		return ctx, telemetry.Operation{}
	}
	ctx = t.tel.Extract(ctx, params, h)
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, mcpconv.Tenant.String(tenant.From(ctx)))
	if len(id) > 0 {
		// The client's to choose, up to the body limit: bounded as in the
		// log line.
		attrs = append(attrs, mcpconv.RequestID.String(logging.Field(unquote(id))))
	}
	if sid != "" {
		attrs = append(attrs, mcpconv.SessionID.String(store.ClientSessionHandle(sid)))
	}
	if version != "" {
		attrs = append(attrs, mcpconv.ProtocolVersion.String(version))
	}
	ctx, op := t.tel.StartServer(ctx, method, tool, attrs...)
	if sc := op.Span().SpanContext(); sc.IsSampled() {
		rec.trace = sc
	}
	return ctx, op
}

// endOp ends the span serverOp started, with the outcome the request's
// log line records: a JSON-RPC error's code, or a tool's isError result
// (the guardrails put the envelope's code on the span).
func (t *Transport) endOp(ctx context.Context, op telemetry.Operation, rec *requestLog) {
	if !t.tel.Enabled() {
		return
	}
	errType := ""
	switch {
	case rec.rpcCode != 0:
		errType = strconv.Itoa(rec.rpcCode)
		op.Span().SetAttributes(mcpconv.RPCErrorCode.Int(rec.rpcCode))
	case rec.toolError:
		errType = "tool_error" // gen-ai/mcp: a CallToolResult with isError
	}
	op.End(ctx, errType)
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

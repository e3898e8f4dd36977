// Package mcpconv names what the OpenTelemetry semantic conventions for
// MCP (gen-ai/mcp, development status) and this server put on spans: the
// attribute keys and the span names. It is a leaf
// (docs/architecture-layers.md), so that the cores that annotate a span
// they did not start — the guardrails around a tool call — name things
// as internal/telemetry does, without importing it.
package mcpconv

import "go.opentelemetry.io/otel/attribute"

// Attributes of the conventions.
const (
	MethodName      = attribute.Key("mcp.method.name")
	SessionID       = attribute.Key("mcp.session.id")
	ProtocolVersion = attribute.Key("mcp.protocol.version")
	RequestID       = attribute.Key("jsonrpc.request.id")
	ToolName        = attribute.Key("gen_ai.tool.name")
	PromptName      = attribute.Key("gen_ai.prompt.name")
	ErrorType       = attribute.Key("error.type")
	RPCErrorCode    = attribute.Key("rpc.response.status_code")
)

// Attributes this server adds, under its own namespace.
const (
	// Tenant is the request's tenant; an operator may drop it in the
	// collector.
	Tenant = attribute.Key("mcp_runtime.tenant")
	// ErrorCode is the envelope's error code of a failed tool call.
	ErrorCode = attribute.Key("mcp_runtime.error.code")
	// ToolIsError is a tool result's isError.
	ToolIsError = attribute.Key("mcp_runtime.tool.is_error")
	// Guardrail names the guardrail of a guardrail span.
	Guardrail = attribute.Key("mcp_runtime.guardrail")
	// TimeoutMs is the deadline a tool call ran under.
	TimeoutMs = attribute.Key("mcp_runtime.timeout_ms")
	// ResourceKind is the scheme of an updated resource's URI: a
	// notification's span names the kind, never the URI, which names the
	// client's entity (so mcp.resource.uri is not set).
	ResourceKind = attribute.Key("mcp_runtime.resource.kind")
	// Delivered is how many subscribers a notification's delivery reached
	// on its replica.
	Delivered = attribute.Key("mcp_runtime.notifications.delivered")
)

// SpanName is "{mcp.method.name} {target}", or the method alone when there
// is no low-cardinality target (a tool or prompt name; never a URI).
func SpanName(method, target string) string {
	if target == "" {
		return method
	}
	return method + " " + target
}

// Guardrail span names: the checks before a tool runs that can reject it
// or make it wait, and the deadline it runs under.
const (
	SpanRateLimit  = "guardrail rate_limit"  // the caller's tool-call budget
	SpanMemoryGate = "guardrail memory_gate" // the memory-pressure check
	SpanLimits     = "guardrail limits"      // argument limits and the request size
	SpanTimeout    = "guardrail timeout"     // the tool's run under its deadline
)

package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
)

// span starts the child span name of the call's span when that span is
// recorded, and returns ctx and nil otherwise.
func (p *Pipeline[C]) span(ctx context.Context, name string) (context.Context, trace.Span) {
	if p.cfg.Tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	return p.cfg.Tracer.Start(ctx, name, trace.WithAttributes(mcpconv.Guardrail.String(name)))
}

// endSpan ends a guardrail span (nil: none), failed with code when the
// guardrail answered the call ("": it let the call through).
func endSpan(sp trace.Span, code response.Code) {
	if sp == nil {
		return
	}
	if code != "" {
		sp.SetAttributes(mcpconv.ErrorCode.String(string(code)))
		sp.SetStatus(codes.Error, string(code))
	}
	sp.End()
}

// codeOf is a rejection's code, "" for none.
func codeOf(rej *response.Error) response.Code {
	if rej == nil {
		return ""
	}
	return rej.Code
}

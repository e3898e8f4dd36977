package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

func traceOf(ctx context.Context) string {
	return trace.SpanContextFromContext(ctx).TraceID().String()
}

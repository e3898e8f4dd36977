package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// ChildTracerProvider is the tracer provider for the PostgreSQL and Redis
// clients' own instrumentation: its tracers start a span only under a
// recording one. Left to themselves they would make a root trace of
// every query the server makes on its own — the trace writer's batches,
// purges, the replicas' pub/sub — and the sampler, parent-based, would
// keep them all; under a request's span, the store's work is where the
// time went. Off, it is the no-op provider.
func (t *Telemetry) ChildTracerProvider() trace.TracerProvider {
	if !t.enabled {
		return t.provider
	}
	return childProvider{t.provider}
}

type childProvider struct{ trace.TracerProvider }

func (p childProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childTracer{p.TracerProvider.Tracer(name, opts...)}
}

type childTracer struct{ trace.Tracer }

// Start starts a span when ctx holds a recording one; otherwise it
// returns ctx and that span as they are (ending a non-recording span
// does nothing), so a client that ends the span of the context it got
// back ends nothing of its caller's.
func (t childTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return t.Tracer.Start(ctx, name, opts...)
}

package statesync

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// The delivery of a sampled mutation's update is a span of its own,
// linked to the mutation's span, that names the resource's kind but not
// its URI (the client's entity); an unsampled mutation's delivery makes
// no span.
func TestDeliverySpanLinksToTheMutation(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	d := &fakeDeliverer{n: 2}
	n := NewNotifier(d, nil, zerolog.Nop(), tp.Tracer("test"))
	ctx, mutation := tp.Tracer("test").Start(tenant.With(context.Background(), "acme"), "tools/call memory_store")
	n.Changed(ctx, "memory://team/secret-key")
	n.Listed(ctx)
	n.Changed(context.Background(), "memory://team/untraced")
	mutation.End()
	n.Close(context.Background())

	var deliveries []sdktrace.ReadOnlySpan
	for _, sp := range spans.Ended() {
		if sp.SpanKind() == trace.SpanKindProducer {
			deliveries = append(deliveries, sp)
		}
	}
	if len(deliveries) != 2 {
		t.Fatalf("%d delivery spans, want the traced update's and list change's", len(deliveries))
	}
	for i, want := range []string{"notifications/resources/updated", "notifications/resources/list_changed"} {
		sp := deliveries[i]
		if sp.Name() != want {
			t.Errorf("delivery %d named %q, want %q", i, sp.Name(), want)
		}
		if links := sp.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != mutation.SpanContext().SpanID() {
			t.Errorf("%s links %v, want the mutation's span", sp.Name(), links)
		}
		if sp.Parent().IsValid() {
			t.Errorf("%s has a parent; a delivery is a trace of its own", sp.Name())
		}
		for _, kv := range sp.Attributes() {
			if strings.Contains(kv.Value.String(), "secret-key") {
				t.Errorf("%s carries the URI in %s", sp.Name(), kv.Key)
			}
		}
	}

}

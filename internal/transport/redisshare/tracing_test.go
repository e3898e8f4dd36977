package redisshare

import (
	"context"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil/otlptest"
)

// A traced delivery on one replica reaches the listen streams of another,
// whose own delivery is a consumer span linked to the first: State
// Sync's notifications lead back to their mutation across replicas
// (docs/adr/0046-opentelemetry.md).
func TestListenDeliveryLinksAcrossReplicas(t *testing.T) {
	rcv, endpoint := otlptest.Start(t, otlptest.HTTP)
	noEnv := func(string) string { return "" }
	tel1, err := telemetry.Setup(context.Background(), telemetry.Config{Endpoint: endpoint}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tel2, err := telemetry.Setup(context.Background(), telemetry.Config{Endpoint: endpoint}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	r1 := replica(t, rdb, prefix, func(c *replicaConfig) { c.Telemetry = tel1 })
	r2 := replica(t, rdb, prefix, func(c *replicaConfig) { c.Telemetry = tel2 })
	plan := listenOn(t, r1, "plan", map[string]any{"resourceSubscriptions": []string{"memory://team/plan"}})

	ctx, delivery := tel2.Tracer().Start(context.Background(), "notifications/resources/updated")
	if _, err := r2.tr.ResourceUpdatedContext(ctx, "", "memory://team/plan"); err != nil {
		t.Fatal(err)
	}
	delivery.End()
	if got := heard(t, plan, 1); len(got) != 1 {
		t.Fatalf("heard %v", got)
	}
	// r1 ends its delivery's span once the event is queued for every
	// listen, which may be after the listen's client has read it.
	flusher, ok := tel1.TracerProvider().(interface{ ForceFlush(context.Context) error })
	if !ok {
		t.Fatalf("%T cannot flush", tel1.TracerProvider())
	}
	var linked *tracepb.Span
	testutil.Eventually(t, 5*time.Second, "r1's delivery span, linked to r2's", func() bool {
		if err := flusher.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		linked = linkedTo(rcv.Spans(), delivery.SpanContext().SpanID().String())
		return linked != nil
	})
	if a := otlptest.Attrs(linked); a["mcp_runtime.notifications.delivered"] != "1" || linked.GetName() != "notifications/resources/updated" {
		t.Errorf("r1's delivery span %q with attributes %v", linked.GetName(), a)
	}
	for _, tel := range []*telemetry.Telemetry{tel1, tel2} {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// linkedTo is the consumer span among spans that links to span id.
func linkedTo(spans []otlptest.Span, id string) *tracepb.Span {
	for _, sp := range spans {
		if sp.GetKind() != tracepb.Span_SPAN_KIND_CONSUMER {
			continue
		}
		for _, l := range sp.GetLinks() {
			if otlptest.SpanID(&tracepb.Span{SpanId: l.GetSpanId()}) == id {
				return sp.Span
			}
		}
	}
	return nil
}

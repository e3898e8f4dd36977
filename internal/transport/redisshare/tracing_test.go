package redisshare

import (
	"context"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
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
	for _, tel := range []*telemetry.Telemetry{tel1, tel2} {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, sp := range rcv.Spans() {
		if sp.GetKind() != tracepb.Span_SPAN_KIND_CONSUMER {
			continue
		}
		for _, l := range sp.GetLinks() {
			if otlptest.SpanID(&tracepb.Span{SpanId: l.GetSpanId()}) == delivery.SpanContext().SpanID().String() {
				if a := otlptest.Attrs(sp.Span); a["mcp_runtime.notifications.delivered"] != "1" || sp.GetName() != "notifications/resources/updated" {
					t.Errorf("r1's delivery span %q with attributes %v", sp.GetName(), a)
				}
				return
			}
		}
	}
	t.Fatalf("no span of r1's delivery linked to r2's among %d spans", len(rcv.Spans()))
}

package statesync

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Deliverer hands an update to this process's subscribers; the transport
// is one.
type Deliverer interface {
	// ResourceUpdatedContext tells uri's subscribers in tenant that it
	// changed; ctx carries the delivery's span, which other replicas'
	// deliveries link to.
	ResourceUpdatedContext(ctx context.Context, tenant, uri string) (int, error)
	// ResourcesListChanged tells tenant's listeners of its resource list
	// that an entity was created or deleted.
	ResourcesListChanged(ctx context.Context, tenant string)
}

// Notifier turns State Sync's outcomes into notifications/resources/updated:
// the URI of every entity a state tool reports changed (Changed), and
// stale://<pattern> for every pattern a successful mutation invalidated
// (AfterCall, the server's after-call hook).
//
// Delivery is in-process in every deployment, with one replica or
// several: with shared client sessions the transport's delivery, on the
// replica where the update happened, reaches every subscriber's log in
// Redis, whichever replica holds its stream. Publishing never blocks on a
// slow subscriber: delivery appends to the subscriber's stream log, which
// its connection drains.
//
// Delivery is also off the mutation's path (queue.go): the mutation
// queues its updates and answers, and one goroutine hands them to the
// deliverer.
type Notifier struct {
	d         Deliverer
	layer     *Layer // nil: the policy layer is off
	tracer    trace.Tracer
	log       zerolog.Logger
	published atomic.Int64
	delivered atomic.Int64
	dropped   atomic.Int64
	q         queue
}

// NewNotifier returns a notifier that delivers through d. layer is the
// policy layer whose invalidations AfterCall announces; nil when
// stateSync.enabled is false, and then AfterCall is not to be installed.
// Its delivery goroutine runs until Close. tracer, when not nil, makes a
// span of each delivery of a sampled mutation's update, linked to the
// mutation's span.
func NewNotifier(d Deliverer, layer *Layer, log zerolog.Logger, tracer trace.Tracer) *Notifier {
	n := &Notifier{d: d, layer: layer, log: log, tracer: tracer}
	n.q.init()
	go n.run()
	return n
}

// Changed announces that the entity at uri changed, to its subscribers in
// the tenant of ctx. Subscribing to an entity is plain MCP
// (resources/subscribe), so this runs with the policy layer off too.
func (n *Notifier) Changed(ctx context.Context, uri string) {
	n.publish(ctx, tenant.From(ctx), uri)
}

// Listed announces that an entity of the tenant of ctx was created or
// deleted, so its resources/list changed.
func (n *Notifier) Listed(ctx context.Context) {
	n.enqueue(notice{tenant: tenant.From(ctx), cause: n.cause(ctx)})
}

// AfterCall applies causal invalidation to the result of a call of tool
// (Layer.AfterCall) and tells the subscribers of each invalidated pattern.
// It returns res, whose Content the layer may have replaced.
func (n *Notifier) AfterCall(ctx context.Context, tool string, res *protocol.CallToolResult) *protocol.CallToolResult {
	if n.layer == nil {
		return res
	}
	ev := n.layer.AfterCall(tool, res)
	if ev == nil {
		return res
	}
	tn := tenant.From(ctx)
	for _, p := range ev.Patterns {
		n.publish(ctx, tn, StaleURI(p))
	}
	return res
}

// publish queues uri's update for its subscribers in tenantID.
func (n *Notifier) publish(ctx context.Context, tenantID, uri string) {
	n.published.Add(1)
	n.enqueue(notice{tenant: tenantID, uri: uri, cause: n.cause(ctx)})
}

// cause is the span of ctx when deliveries are traced and it is sampled.
func (n *Notifier) cause(ctx context.Context) trace.SpanContext {
	if n.tracer == nil {
		return trace.SpanContext{}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		return sc
	}
	return trace.SpanContext{}
}

// deliver hands nt to the deliverer. A failure is logged, never
// returned: a notification that cannot be sent must not fail the
// mutation that caused it.
func (n *Notifier) deliver(nt notice) {
	span := n.deliverySpan(nt)
	ctx := context.Background()
	if span.IsRecording() {
		ctx = trace.ContextWithSpan(ctx, span) // the other replicas' deliveries link to it
	}
	if nt.uri == "" {
		n.d.ResourcesListChanged(ctx, nt.tenant)
		span.End()
		return
	}
	delivered, err := n.d.ResourceUpdatedContext(ctx, nt.tenant, nt.uri)
	span.SetAttributes(mcpconv.Delivered.Int(delivered))
	span.End()
	if err != nil {
		// The URI names the entity (memory://<namespace>/<key>), which is
		// the client's data: only its kind is logged.
		kind, _, _ := strings.Cut(nt.uri, "://")
		n.log.Warn().Err(err).Str("kind", kind).Msg("resource update not delivered")
		return
	}
	n.delivered.Add(int64(delivered))
}

// deliverySpan starts the span of nt's delivery: a root of its own
// (one mutation's update reaches any number of subscribers, later, on
// another goroutine), linked to the mutation's span. Off, or for an
// unsampled mutation, a non-recording span that costs nothing.
func (n *Notifier) deliverySpan(nt notice) trace.Span {
	if !nt.cause.IsValid() {
		return trace.SpanFromContext(context.Background())
	}
	method := protocol.NotificationResourcesUpdated
	if nt.uri == "" {
		method = protocol.NotificationResourcesListChange
	}
	// The URI names the client's entity (memory://<namespace>/<key>):
	// the span carries its kind only, as the log does.
	kind, _, _ := strings.Cut(nt.uri, "://")
	_, span := n.tracer.Start(context.Background(), method, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithLinks(trace.Link{SpanContext: nt.cause}),
		trace.WithAttributes(mcpconv.MethodName.String(method), mcpconv.Tenant.String(nt.tenant), mcpconv.ResourceKind.String(kind)))
	return span
}

// NotifierStats counts what a Notifier did.
type NotifierStats struct {
	Published int64 // updates published
	Delivered int64 // notifications queued to subscribers
	// Waiting is how many updates wait for the delivery goroutine now.
	Waiting int
	// Dropped counts updates still queued when Close ran out of time.
	Dropped int64
}

// Stats returns the counters.
func (n *Notifier) Stats() NotifierStats {
	return NotifierStats{Published: n.published.Load(), Delivered: n.delivered.Load(), Waiting: n.q.len(), Dropped: n.dropped.Load()}
}

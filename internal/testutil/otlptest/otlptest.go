// Package otlptest is an OpenTelemetry collector for tests: it takes OTLP
// exports over HTTP (http/protobuf) or gRPC, decodes them with the
// OpenTelemetry proto package and keeps the spans and the metric names
// for the test to read.
package otlptest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Protocols a Receiver speaks, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	HTTP = "http/protobuf"
	GRPC = "grpc"
)

// Receiver keeps what it is sent.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu      sync.Mutex
	spans   []Span
	metrics []string
	changed chan struct{} // closed and replaced on every export
}

// Span is a received span and the service.name of the process that sent
// it.
type Span struct {
	*tracepb.Span
	Service string
}

// Start serves a Receiver over protocol until the test ends and returns it
// with its endpoint URL.
func Start(t testing.TB, protocol string) (*Receiver, string) {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	if protocol == HTTP {
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		return r, srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(g, r)
	collectormetrics.RegisterMetricsServiceServer(g, metricsService{r: r})
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	return r, "http://" + ln.Addr().String()
}

func (r *Receiver) addSpans(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Span: sp, Service: service})
			}
		}
	}
	r.wake()
}

func (r *Receiver) addMetrics(req *collectormetrics.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, mm := range sm.GetMetrics() {
				r.metrics = append(r.metrics, mm.GetName())
			}
		}
	}
	r.wake()
}

// wake tells the waiters that something arrived; r.mu is held.
func (r *Receiver) wake() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Export is the gRPC trace service.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.addSpans(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	collectormetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (m metricsService) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	m.r.addMetrics(req)
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

// ServeHTTP takes http/protobuf exports.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch req.URL.Path {
	case "/v1/traces":
		var m collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addSpans(&m)
	case "/v1/metrics":
		var m collectormetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addMetrics(&m)
	default:
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitSpans waits until the spans received satisfy done, or ctx ends,
// and returns them.
func (r *Receiver) WaitSpans(ctx context.Context, done func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, changed := append([]Span(nil), r.spans...), r.changed
		r.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, ctx.Err()
		}
	}
}

// HasMetric reports whether a metric of that name was received.
func (r *Receiver) HasMetric(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.metrics {
		if m == name {
			return true
		}
	}
	return false
}

// Metrics returns the names of the metrics received so far.
func (r *Receiver) Metrics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.metrics...)
}

// Attrs are a span's attributes as text: strings as they are, integers
// and booleans as Go formats them, others in their OTLP text form.
func Attrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.GetAttributes() {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		default:
			out[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return out
}

// TraceID and SpanID are a span's ids in hex; ParentID its parent's.
func TraceID(s *tracepb.Span) string  { return hex.EncodeToString(s.GetTraceId()) }
func SpanID(s *tracepb.Span) string   { return hex.EncodeToString(s.GetSpanId()) }
func ParentID(s *tracepb.Span) string { return hex.EncodeToString(s.GetParentSpanId()) }

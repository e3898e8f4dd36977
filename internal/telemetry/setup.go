package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Config is what the `telemetry:` section sets; the standard environment
// covers the rest (and an endpoint set here wins over it).
type Config struct {
	// Endpoint is the OTLP endpoint URL (http://collector:4318 for
	// http/protobuf, http://collector:4317 for grpc). Empty: the
	// environment's OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and off when neither is set.
	Endpoint string
	// Protocol is "http/protobuf" or "grpc"; empty: the environment's
	// OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the OTLP default).
	Protocol string
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// MetricInterval is how often metrics are exported; zero: 60 s.
	MetricInterval time.Duration
}

// Protocols the exporters speak.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Bounds on what telemetry holds: an attribute value's length, and the
// series of one metric (beyond it, the SDK's overflow series).
const (
	maxAttributeValue = 1024
	maxSeries         = 2000
)

// ServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const ServiceName = "mcp-runtime"

// instrumentation names the tracer and meter.
const instrumentation = "github.com/mcp-runtime/mcp-runtime"

// Telemetry holds the providers; the zero value is not usable, Setup
// builds one.
type Telemetry struct {
	enabled    bool
	provider   trace.TracerProvider
	tracer     trace.Tracer
	meter      metric.Meter
	propagator propagation.TextMapPropagator
	metrics    instruments
	shutdown   []func(context.Context) error
}

// Setup builds the providers for cfg and the environment getenv reads
// (os.Getenv in production). Without an endpoint it returns telemetry
// that is off. The exporters connect lazily: a collector that is down
// loses spans, never requests.
func Setup(ctx context.Context, cfg Config, getenv func(string) string) (*Telemetry, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Off(), nil
	}
	protocol := cfg.Protocol
	if protocol == "" {
		protocol = firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = ProtocolHTTP
	}
	if protocol != ProtocolHTTP && protocol != ProtocolGRPC {
		return nil, fmt.Errorf("telemetry.protocol: %q is not %s or %s", protocol, ProtocolHTTP, ProtocolGRPC)
	}
	tracesURL := signalURL(cfg.Endpoint, getenv, protocol, "TRACES", "/v1/traces")
	if tracesURL == "" {
		return Off(), nil
	}
	metricsURL := signalURL(cfg.Endpoint, getenv, protocol, "METRICS", "/v1/metrics")
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", ServiceName), attribute.String("service.version", cfg.ServiceVersion)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	spans, err := spanExporter(ctx, protocol, tracesURL)
	if err != nil {
		return nil, err
	}
	// The sampler comes from OTEL_TRACES_SAMPLER and its argument,
	// parent-based by default: a client's sampling decision carries
	// through the gateway.
	// Attribute values are bounded (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT may
	// lower the bound): the spans of other clients' instrumentation
	// (a query's text) must not carry megabytes into the export queue.
	limits := sdktrace.NewSpanLimits()
	if limits.AttributeValueLengthLimit < 0 || limits.AttributeValueLengthLimit > maxAttributeValue {
		limits.AttributeValueLengthLimit = maxAttributeValue
	}
	sampler, err := samplerFrom(getenv)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithSampler(followLinks{sampler}))
	t := &Telemetry{enabled: true, propagator: newPropagator()}
	t.provider, t.tracer = tp, tp.Tracer(instrumentation)
	t.shutdown = []func(context.Context) error{tp.Shutdown}
	t.meter = metricnoop.NewMeterProvider().Meter(instrumentation)
	if metricsURL != "" { // only a traces endpoint: no metrics
		points, err := metricExporter(ctx, protocol, metricsURL)
		if err != nil {
			_ = tp.Shutdown(ctx)
			return nil, err
		}
		interval := cfg.MetricInterval
		if interval <= 0 {
			interval = time.Minute
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithCardinalityLimit(maxSeries),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(points, sdkmetric.WithInterval(interval))),
			sdkmetric.WithView(durationView()))
		t.meter = mp.Meter(instrumentation)
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	if err := t.metrics.init(t.meter); err != nil {
		_ = t.Shutdown(ctx)
		return nil, err
	}
	return t, nil
}

// newPropagator reads and writes W3C Trace Context. Not Baggage: it is
// the client's, and a gateway does not pass it to every server behind it.
func newPropagator() propagation.TextMapPropagator {
	return propagation.TraceContext{}
}

func spanExporter(ctx context.Context, protocol, endpoint string) (sdktrace.SpanExporter, error) {
	var (
		e   sdktrace.SpanExporter
		err error
	)
	if protocol == ProtocolGRPC {
		e, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	} else {
		e, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP %s span exporter: %w", protocol, err)
	}
	return e, nil
}

func metricExporter(ctx context.Context, protocol, endpoint string) (sdkmetric.Exporter, error) {
	var (
		e   sdkmetric.Exporter
		err error
	)
	if protocol == ProtocolGRPC {
		e, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(endpoint))
	} else {
		e, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP %s metric exporter: %w", protocol, err)
	}
	return e, nil
}

// signalURL is where one signal is exported: the configured endpoint,
// else the environment's endpoint of that signal (taken as it is), else
// its general one — to which http/protobuf adds the signal's path, as the
// OTLP exporter specification says. "" when none is set. Resolved here,
// not by the exporters, so that getenv is the only environment read.
func signalURL(configured string, getenv func(string) string, protocol, signal, path string) string {
	base := configured
	if base == "" {
		if own := firstSet(getenv, "OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT"); own != "" {
			return own
		}
		base = firstSet(getenv, "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if base == "" || protocol == ProtocolGRPC {
		return base
	}
	return strings.TrimSuffix(base, "/") + path
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// Off is telemetry that exports nothing and costs nothing: the API's
// no-op providers.
func Off() *Telemetry {
	t := &Telemetry{provider: tracenoop.NewTracerProvider(), propagator: newPropagator()}
	t.tracer = t.provider.Tracer(instrumentation)
	t.meter = metricnoop.NewMeterProvider().Meter(instrumentation)
	_ = t.metrics.init(t.meter) // the no-op meter's instruments cannot fail
	return t
}

// Enabled reports whether anything is exported.
func (t *Telemetry) Enabled() bool { return t.enabled }

// Tracer is the process's tracer (a no-op one when off).
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer }

// TracerProvider is the process's tracer provider, for the PostgreSQL and
// Redis clients' own instrumentation (a no-op one when off).
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.provider }

// Shutdown flushes what is buffered and stops the exporters, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

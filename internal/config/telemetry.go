package config

import (
	"fmt"
	"net/url"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
)

// Telemetry configures OpenTelemetry export
// (docs/adr/0046-opentelemetry.md). The standard environment covers the
// rest: OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL when
// these keys are empty, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, OTEL_SDK_DISABLED.
// With no endpoint in either, nothing is exported and nothing is paid.
type Telemetry struct {
	// Endpoint is the OTLP collector's URL (http://collector:4318 for
	// http/protobuf, http://collector:4317 for grpc); it wins over the
	// environment's.
	Endpoint string `yaml:"endpoint"`
	// Protocol is http/protobuf or grpc; empty: the environment's, else
	// http/protobuf.
	Protocol string `yaml:"protocol"`
	// MetricIntervalMs is how often the MCP duration metrics are
	// exported over OTLP (Prometheus's /metrics is scraped as before).
	MetricIntervalMs int64 `yaml:"metricIntervalMs"`
}

func defaultTelemetry() Telemetry { return Telemetry{MetricIntervalMs: 60_000} }

// MetricInterval is MetricIntervalMs as a duration.
func (t Telemetry) MetricInterval() time.Duration { return ms(t.MetricIntervalMs) }

// TelemetryConfig is the section as internal/telemetry takes it.
func (t Telemetry) TelemetryConfig(serviceVersion string) telemetry.Config {
	return telemetry.Config{Endpoint: t.Endpoint, Protocol: t.Protocol, ServiceVersion: serviceVersion, MetricInterval: t.MetricInterval()}
}

func (t Telemetry) validate(bad func(key string, value any, want string)) {
	if t.Endpoint != "" {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Not echoed: a collector URL may carry credentials.
			bad("telemetry.endpoint", "(hidden)", "an http:// or https:// URL of an OTLP collector")
		}
	}
	switch t.Protocol {
	case "", telemetry.ProtocolHTTP, telemetry.ProtocolGRPC:
	default:
		bad("telemetry.protocol", t.Protocol, fmt.Sprintf("%s or %s", telemetry.ProtocolHTTP, telemetry.ProtocolGRPC))
	}
	if t.MetricIntervalMs < 1000 || t.MetricIntervalMs > maxDurationMs {
		bad("telemetry.metricIntervalMs", t.MetricIntervalMs, fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	}
}

// Package telemetry is OpenTelemetry for mcp-runtime: the tracer and meter
// providers built from the standard environment (OTEL_EXPORTER_OTLP_*,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER) and the
// `telemetry:` configuration, trace context read from and written to an MCP
// message's params._meta as well as HTTP headers, and the names and
// attributes of the OpenTelemetry semantic conventions for MCP (gen-ai/mcp,
// development status).
//
// With no endpoint configured it is off, and free: the providers are the
// API's no-op ones, Extract returns its context unchanged and nothing is
// exported (the cost is measured in BENCHMARKS.md).
//
// Trace context travels in _meta because one HTTP request is not one MCP
// message: a POST's stream carries notifications and the server's own
// requests, and a GET stream outlives many calls (gen-ai/mcp, "Context
// propagation"). _meta wins over the headers when both carry one.
package telemetry

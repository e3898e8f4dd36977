package telemetry

import (
	"fmt"
	"strconv"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// samplerFrom is the sampler OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG name, as the OpenTelemetry SDK specification
// reads them, read through getenv; parentbased_always_on when unset.
func samplerFrom(getenv func(string) string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); arg != "" {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio from 0 to 1", arg)
		}
		ratio = r
	}
	switch name := getenv("OTEL_TRACES_SAMPLER"); name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not one of always_on, always_off, traceidratio, "+
			"parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
	}
}

// followLinks samples a root span linked to a sampled span — State
// Sync's delivery of a sampled mutation's update — and leaves every
// other decision to the configured sampler. Decided on its own, a ratio
// sampler would keep r² of the mutations' links.
type followLinks struct{ sdktrace.Sampler }

func (s followLinks) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		for _, l := range p.Links {
			if l.SpanContext.IsSampled() {
				return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
			}
		}
	}
	return s.Sampler.ShouldSample(p)
}

func (s followLinks) Description() string { return "FollowLinks{" + s.Sampler.Description() + "}" }

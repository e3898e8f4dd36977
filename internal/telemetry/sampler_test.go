package telemetry

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The sampler is the one OTEL_TRACES_SAMPLER and its argument name, read
// through the environment Setup is given; a misspelt one stops start-up.
// Whatever it is, a root span linked to a sampled span is sampled: a
// delivery of a sampled mutation's update keeps its link.
func TestSampler(t *testing.T) {
	env := func(name, arg string) func(string) string {
		return func(k string) string {
			return map[string]string{"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": arg}[k]
		}
	}
	for _, tt := range []struct{ name, arg, want string }{
		{"", "", "ParentBased{root:AlwaysOnSampler"},
		{"always_off", "", "AlwaysOffSampler"},
		{"parentbased_traceidratio", "0.01", "ParentBased{root:TraceIDRatioBased{0.01}"},
		{"traceidratio", "", "TraceIDRatioBased{1}"},
		{"sometimes", "", "error: OTEL_TRACES_SAMPLER"},
		{"traceidratio", "2", "error: OTEL_TRACES_SAMPLER_ARG"},
	} {
		s, err := samplerFrom(env(tt.name, tt.arg))
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = s.Description()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s %s: %s, want %s…", tt.name, tt.arg, got, tt.want)
		}
	}

	never := followLinks{sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	link := func(flags trace.TraceFlags) []trace.Link {
		return []trace.Link{{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})}}
	}
	newTrace, _ := trace.TraceIDFromHex("11111111111111111111111111111111")
	for _, tt := range []struct {
		name  string
		links []trace.Link
		want  sdktrace.SamplingDecision
	}{
		{"linked to a sampled span", link(trace.FlagsSampled), sdktrace.RecordAndSample},
		{"linked to an unsampled span", link(0), sdktrace.Drop},
		{"no link", nil, sdktrace.Drop},
	} {
		got := never.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: newTrace, Name: "d", Links: tt.links})
		if got.Decision != tt.want {
			t.Errorf("%s: decision %v, want %v", tt.name, got.Decision, tt.want)
		}
	}
}

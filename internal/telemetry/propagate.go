package telemetry

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Keys of trace context in params._meta (gen-ai/mcp, "Context
// propagation": the W3C Trace Context header names).
var metaKeys = []string{"traceparent", "tracestate"}

// maxMetaValue bounds a trace-context value read from _meta: traceparent
// is 55 bytes, and W3C asks vendors to pass on tracestate up to 512; a
// longer value is ignored.
const maxMetaValue = 512

// metaCarrier is trace context read from a message's _meta.
type metaCarrier map[string]string

func (c metaCarrier) Get(key string) string { return c[key] }
func (c metaCarrier) Set(key, value string) { c[key] = value }
func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Extract returns ctx carrying the trace context of an incoming message:
// from its params' _meta when that holds a valid one, else from the HTTP
// header. params is the message's params as decoded (valid JSON) and may
// be empty. Off, it returns ctx.
func (t *Telemetry) Extract(ctx context.Context, params json.RawMessage, header http.Header) context.Context {
	if !t.enabled {
		return ctx
	}
	if c := readMeta(params); len(c) > 0 {
		if ext := t.propagator.Extract(ctx, c); trace.SpanContextFromContext(ext).IsValid() {
			return ext
		}
	}
	if header != nil {
		return t.propagator.Extract(ctx, propagation.HeaderCarrier(header))
	}
	return ctx
}

func readMeta(params json.RawMessage) metaCarrier {
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	var meta [1]json.RawMessage
	if protocol.LookupMembers(params, []string{"_meta"}, meta[:]) != nil || len(meta[0]) == 0 || meta[0][0] != '{' {
		return nil
	}
	var v [2]json.RawMessage
	if protocol.LookupMembers(meta[0], metaKeys, v[:]) != nil {
		return nil
	}
	var c metaCarrier
	for i, raw := range v {
		if len(raw) == 0 || len(raw) > maxMetaValue+2 {
			continue
		}
		if s, ok := protocol.StringValue(raw); ok {
			if c == nil {
				c = metaCarrier{}
			}
			c[metaKeys[i]] = s
		}
	}
	return c
}

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// A call made under a trace carries its context to the server in both
// places a server may read it: params._meta and the W3C headers, whichever
// era the server speaks, and whether or not the call relays progress; a
// tracestate longer than 512 bytes stays behind. A call under no trace
// carries neither, nor does any call while tracing is off: a gateway that
// does not trace passes on nothing it did not make.
func TestTraceContextReachesUpstream(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	withState := func(state string) context.Context {
		ts, err := trace.ParseTraceState(state)
		if err != nil {
			t.Fatal(err)
		}
		return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true}))
	}
	traced := withState("")
	vendor := withState("vendor=x")
	long := withState("a=" + strings.Repeat("x", 250) + ",b=" + strings.Repeat("y", 250) + ",c=" + strings.Repeat("z", 250))
	const want = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	answer := func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
	}
	on := tracenoop.NewTracerProvider().Tracer("test") // tracing on; the span itself is not what is tested
	for _, tt := range []struct {
		name          string
		modern, relay bool
		tracer        trace.Tracer
		ctx           context.Context
		want, state   string
	}{
		{"legacy, relayed", false, true, on, traced, want, ""},
		{"legacy, not relayed", false, false, on, traced, want, ""},
		{"legacy, not relayed, with tracestate", false, false, on, vendor, want, "vendor=x"},
		{"legacy, relayed, with tracestate", false, true, on, vendor, want, "vendor=x"},
		{"modern", true, false, on, traced, want, ""},
		{"modern, with tracestate", true, false, on, vendor, want, "vendor=x"},
		{"a tracestate over 512 bytes is not passed on", false, true, on, long, want, ""},
		{"legacy, untraced", false, true, on, context.Background(), "", ""},
		{"legacy, not relayed, untraced", false, false, on, context.Background(), "", ""},
		{"modern, untraced", true, false, on, context.Background(), "", ""},
		{"tracing off: a client's context is not passed on", false, true, nil, traced, "", ""},
		{"tracing off, modern", true, false, nil, traced, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &scriptedServer{modern: tt.modern, onCall: answer}
			m := testManager(t, Options{Declared: []Config{cfg("s", srv.start(t))}, Tracer: tt.tracer})
			if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
				t.Fatal(err)
			}
			var relay Relay
			if tt.relay {
				relay = &recordingRelay{}
			}
			c, cancel := context.WithCancel(tt.ctx)
			defer cancel()
			if _, err := m.CallRelayed(c, "s", "t", json.RawMessage(`{}`), relay); err != nil {
				t.Fatal(err)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			var p struct {
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal([]byte(srv.callBodies[0]), &p); err != nil {
				t.Fatalf("the call's body is not JSON: %v\n%s", err, srv.callBodies[0])
			}
			got, _ := p.Params.Meta["traceparent"].(string)
			if got != tt.want || srv.callHeaders[0].Get("Traceparent") != tt.want {
				t.Errorf("_meta.traceparent %q, header %q; want %q in both\n%s", got, srv.callHeaders[0].Get("Traceparent"), tt.want, srv.callBodies[0])
			}
			state, _ := p.Params.Meta["tracestate"].(string)
			if state != tt.state || srv.callHeaders[0].Get("Tracestate") != tt.state {
				t.Errorf("_meta.tracestate %q, header %q; want %q in both", state, srv.callHeaders[0].Get("Tracestate"), tt.state)
			}
			if _, ok := p.Params.Meta["progressToken"]; ok != tt.relay {
				t.Errorf("progressToken sent %v, want %v: %s", ok, tt.relay, srv.callBodies[0])
			}
		})
	}
}

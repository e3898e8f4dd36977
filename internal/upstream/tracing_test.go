package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A call made under a trace carries its context to the server in both
// places a server may read it: params._meta and the W3C header, whichever
// era the server speaks, and whether or not the call relays progress. A
// call under no trace carries neither.
func TestTraceContextReachesUpstream(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	traced := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	const want = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	answer := func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
	}
	for _, tt := range []struct {
		name          string
		modern, relay bool
		ctx           context.Context
		want          string
	}{
		{"legacy, relayed", false, true, traced, want},
		{"legacy, not relayed", false, false, traced, want},
		{"modern", true, false, traced, want},
		{"legacy, untraced", false, true, context.Background(), ""},
		{"modern, untraced", true, false, context.Background(), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &scriptedServer{modern: tt.modern, onCall: answer}
			m := testManager(t, Options{Declared: []Config{cfg("s", srv.start(t))}})
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
			if _, ok := p.Params.Meta["progressToken"]; ok != tt.relay {
				t.Errorf("progressToken sent %v, want %v: %s", ok, tt.relay, srv.callBodies[0])
			}
		})
	}
}

package transport

import (
	"net/http"
	"testing"
	"time"

	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// A handler's context carries the request's values (a tracing span, the
// principal), inline or detached, though not its cancellation.
func TestHandlerContextKeepsRequestValues(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.SpanValue = "span-1" })
	sid := h.Initialize(t)
	for _, tc := range []struct{ tool, accept string }{
		{"ctxvalue", th.AcceptBoth},
		{"ctxvalue_long", th.AcceptBoth}, // detached: runs on its own goroutine
		{"ctxvalue_long", "application/json"},
	} {
		t.Run(tc.tool+" "+tc.accept, func(t *testing.T) {
			r := h.Post(t, sid, th.ToolCall(1, tc.tool, map[string]any{}, nil), "Accept", tc.accept)
			if text, _ := th.ToolText(t, th.ResultOf(t, r, "1")); text != "span-1" {
				t.Fatalf("the handler's context carries %q, want the request's span-1", text)
			}
		})
	}
}

// The status the transport reports for each request (Options.Observe, the
// log line) is the status the client got.
func TestObservedStatusIsWhatWasWritten(t *testing.T) {
	type observed struct {
		method string
		status int
	}
	seen := make(chan observed, 16)
	h := newHarness(t, withOpts(func(o *Options) {
		o.Observe = func(method string, status int) { seen <- observed{method, status} }
	}))
	sid := h.Initialize(t)
	<-seen // initialize's
	<-seen // notifications/initialized's
	unknown, err := NewSessionID()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		Send   func() *th.Reply
		method string
	}{
		{"request", func() *th.Reply { return h.Post(t, sid, th.RPC(1, "tools/list", nil)) }, http.MethodPost},
		{"notification", func() *th.Reply { return h.Post(t, sid, th.RPC(nil, "notifications/initialized", nil)) }, http.MethodPost},
		{"unknown session", func() *th.Reply { return h.Post(t, unknown, th.RPC(1, "tools/list", nil)) }, http.MethodPost},
		{"bad JSON", func() *th.Reply { return h.Post(t, sid, []byte("{")) }, http.MethodPost},
		{"bad media type", func() *th.Reply { return h.Post(t, sid, th.RPC(1, "ping", nil), "Content-Type", "text/plain") }, http.MethodPost},
		{"GET without SSE", func() *th.Reply { return h.Send(t, http.MethodGet, sid, nil, "Accept", "application/json") }, http.MethodGet},
		{"unknown Last-Event-ID stream", func() *th.Reply {
			return h.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream", "Last-Event-ID", "p999-1")
		}, http.MethodGet},
		{"DELETE", func() *th.Reply { return h.Send(t, http.MethodDelete, sid, nil) }, http.MethodDelete},
		{"DELETE again", func() *th.Reply { return h.Send(t, http.MethodDelete, sid, nil) }, http.MethodDelete},
		{"initialize with an unsupported version", func() *th.Reply { return h.Post(t, "", th.InitBody("1999-01-01", nil)) }, http.MethodPost},
	} {
		r := tc.Send()
		select {
		case got := <-seen:
			if got != (observed{tc.method, r.Status}) {
				t.Errorf("%s: observed %v, the client got %d", tc.name, got, r.Status)
			}
		case <-time.After(th.WaitLong):
			t.Fatalf("%s: no status observed", tc.name)
		}
	}
}

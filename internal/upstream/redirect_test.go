package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// An upstream that redirects to another host does not get our credential
// for it sent there: configured headers go to the configured host only,
// and so does a call's trace context.
func TestHeadersStayWithTheirHost(t *testing.T) {
	var elsewhere, home, traceElsewhere, traceHome string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere, traceElsewhere = r.Header.Get("Authorization"), r.Header.Get("Traceparent")
	}))
	defer other.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home, traceHome = r.Header.Get("Authorization"), r.Header.Get("Traceparent")
		// "localhost", not 127.0.0.1: another host for the client.
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/steal", http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	c := httpClientFor(&http.Client{}, Config{URL: up.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer upstream-secret"}},
		dialParams{maxBody: 1 << 20, deployment: "test", propagate: true}, &probe{})
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.URL+"/mcp", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if home != "Bearer upstream-secret" || traceHome == "" {
		t.Errorf("the upstream itself got Authorization %q and traceparent %q", home, traceHome)
	}
	if elsewhere != "" || traceElsewhere != "" {
		t.Errorf("the host redirected to got Authorization %q and traceparent %q", elsewhere, traceElsewhere)
	}
}

// A redirect to the same host under another scheme (an https upstream
// sending us to http) is another origin: the credential is not sent there.
func TestHeadersStayWithTheirScheme(t *testing.T) {
	var plain string
	insecure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain = r.Header.Get("Authorization")
	}))
	defer insecure.Close()
	c := httpClientFor(&http.Client{}, Config{URL: strings.Replace(insecure.URL, "http://", "https://", 1) + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer upstream-secret"}},
		dialParams{maxBody: 1 << 20, deployment: "test"}, &probe{})
	// The request the redirect would make: same host and port, plain http.
	resp, err := c.Post(insecure.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if plain != "" {
		t.Errorf("the same host over http got Authorization %q", plain)
	}
}

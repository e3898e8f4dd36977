package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil/otlptest"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

const (
	metaTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
	headerTrace = "11111111111111111111111111111111"
)

// Every MCP message gets a server span of its own, named and attributed
// as the OpenTelemetry conventions for MCP say, under the trace context
// of its _meta first and its HTTP headers second; the session id appears
// only as its handle, and a tool name the server does not have never
// names a span.
func TestTelemetry_ServerSpans(t *testing.T) {
	rcv, endpoint := otlptest.Start(t, otlptest.HTTP)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Endpoint: endpoint}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	logs := &th.LockedBuffer{}
	h := newHarness(t, withOpts(func(o *Options) { o.Telemetry, o.Logger = tel, zerolog.New(logs) }))
	sid := h.Initialize(t)
	header := []string{"Traceparent", "00-" + headerTrace + "-2222222222222222-01"}
	withMeta := th.RPC(7, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "secret-value"},
		"_meta": map[string]any{"traceparent": "00-" + metaTrace + "-00f067aa0ba902b7-01"}})
	h.Post(t, sid, withMeta, header...)
	h.Post(t, sid, th.ToolCall(8, "echo", map[string]any{"text": "x"}, nil), header...)
	h.Post(t, sid, th.ToolCall(9, "no_such_tool_"+strings.Repeat("x", 40), nil, nil), header...)
	h.Post(t, sid, th.RPC(nil, "notifications/initialized", nil), header...)
	// A method of the client's own choosing names no span and no series.
	h.Post(t, sid, th.RPC(11, "x/"+strings.Repeat("m", 4000), nil), header...)
	h.Post(t, sid, th.RPC(nil, "notifications/"+strings.Repeat("n", 4000), nil), header...)
	h.Post(t, "", modernBody(10, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "m"}}, nil),
		append(modernHeaders("tools/call", "echo"), header...)...)
	// A GET refused after its session was found: a POST stream this
	// server never issued.
	h.Send(t, http.MethodGet, sid, nil, append([]string{"Accept", "text/event-stream", "Last-Event-ID", "p99-1"}, header...)...)
	get := h.OpenGET(t, sid, header...)
	get.Next(t) // the priming event: the stream is open
	get.Close()
	listen := h.PostSSE(t, "", modernBody(12, protocol.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil),
		append([]string{"Mcp-Protocol-Version", protocol.Version20260728, protocol.HeaderMethod, protocol.MethodSubscriptionsListen}, header...)...)
	listen.NextMessage(t) // the acknowledgement
	listen.Close()
	// A stream's span ends when its handler hands the stream on, after
	// the client has read its first event; the request's log line comes
	// after both the span and the stream have ended.
	testutil.Eventually(t, th.WaitLong, "the streams' log lines", func() bool {
		l := logs.String()
		return strings.Count(l, `"method":"GET"`) == 2 && strings.Contains(l, `"method":"subscriptions/listen"`)
	})
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	byID := map[string]*tracepb.Span{}
	var notification, stream, refused *tracepb.Span
	for _, sp := range rcv.Spans() {
		a := otlptest.Attrs(sp.Span)
		if sp.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			continue
		}
		if id := a["jsonrpc.request.id"]; id != "" {
			byID[id] = sp.Span
		}
		if sp.GetName() == "notifications/initialized" {
			notification = sp.Span
		}
		if sp.GetName() == "GET" && otlptest.Attrs(sp.Span)["error.type"] == "" {
			stream = sp.Span
		}
		if sp.GetName() == "GET" && otlptest.Attrs(sp.Span)["error.type"] != "" {
			refused = sp.Span
		}
		if len(sp.GetName()) > 64 || len(a["mcp.method.name"]) > 64 {
			t.Errorf("a span named %.80q…: the client's method became a name", sp.GetName())
		}
		for k, v := range a {
			if strings.Contains(v, "secret-value") || strings.Contains(v, sid) {
				t.Errorf("span %s attribute %s=%q carries an argument value or the session id", sp.GetName(), k, v)
			}
		}
	}
	tests := []struct {
		id, name, trace, errType, session string
	}{
		{"7", "tools/call echo", metaTrace, "", store.ClientSessionHandle(sid)},
		{"8", "tools/call echo", headerTrace, "", store.ClientSessionHandle(sid)},
		{"9", "tools/call", headerTrace, "-32602", store.ClientSessionHandle(sid)},
		{"10", "tools/call echo", headerTrace, "", ""},
		{"11", "_OTHER", headerTrace, "-32601", store.ClientSessionHandle(sid)},
		{"12", "subscriptions/listen", headerTrace, "", ""},
	}
	for _, tt := range tests {
		sp := byID[tt.id]
		if sp == nil {
			t.Errorf("request %s: no server span among %d", tt.id, len(rcv.Spans()))
			continue
		}
		a := otlptest.Attrs(sp)
		if sp.GetName() != tt.name || otlptest.TraceID(sp) != tt.trace {
			t.Errorf("request %s: span %q in trace %s, want %q in %s", tt.id, sp.GetName(), otlptest.TraceID(sp), tt.name, tt.trace)
		}
		if a["mcp.method.name"] != strings.Fields(tt.name)[0] || a["error.type"] != tt.errType || a["mcp.session.id"] != tt.session || a["mcp_runtime.tenant"] == "" {
			t.Errorf("request %s: attributes %v", tt.id, a)
		}
		if tt.errType == "" && strings.HasPrefix(tt.name, "tools/call") && a["gen_ai.tool.name"] != "echo" {
			t.Errorf("request %s: gen_ai.tool.name %q, want echo", tt.id, a["gen_ai.tool.name"])
		}
	}
	if notification == nil || otlptest.TraceID(notification) != headerTrace {
		t.Errorf("notification span %v, want one in the header's trace", notification)
	}
	if stream == nil || otlptest.TraceID(stream) != headerTrace || otlptest.Attrs(stream)["mcp.session.id"] != store.ClientSessionHandle(sid) {
		t.Errorf("GET stream span %v, want one in the header's trace naming the session's handle", stream)
	}
	if refused == nil {
		t.Error("no failed span of the refused GET")
	}
	// The log names the session by its handle, never by its id, which is
	// a credential.
	if strings.Contains(logs.String(), sid) || !strings.Contains(logs.String(), `"session":"`+store.ClientSessionHandle(sid)+`"`) {
		t.Errorf("the log does not name the session by its handle alone:\n%s", logs.String())
	}
	// The request's log line carries its trace and span ids.
	if sp := byID["7"]; sp != nil {
		want := `"traceId":"` + metaTrace + `","spanId":"` + otlptest.SpanID(sp) + `"`
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			found = found || (strings.Contains(line, `"id":7`) && strings.Contains(line, want))
		}
		if !found {
			t.Errorf("no log line of request 7 with %s in:\n%s", want, logs.String())
		}
	}
}

// A request the server sends its client during a traced call is a client
// span under the call's, and carries its trace context in _meta, so that
// a client that traces continues the trace; its params are otherwise
// what they were.
func TestTelemetry_ServerToClientRequest(t *testing.T) {
	rcv, endpoint := otlptest.Start(t, otlptest.HTTP)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Endpoint: endpoint}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, withOpts(func(o *Options) { o.Telemetry = tel }))
	sid, _ := h.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	ps := h.PostSSE(t, sid, th.ToolCall(21, "sample", map[string]any{"prompt": "say hi"}, nil),
		"Traceparent", "00-"+headerTrace+"-2222222222222222-01")
	_, m := ps.NextMessage(t)
	var params struct {
		Meta      map[string]string `json:"_meta"`
		MaxTokens int               `json:"maxTokens"`
	}
	if err := json.Unmarshal(m.Params, &params); err != nil || params.MaxTokens != 16 {
		t.Fatalf("sampling params %s (%v)", m.Params, err)
	}
	traceparent := params.Meta["traceparent"]
	if !strings.HasPrefix(traceparent, "00-"+headerTrace+"-") {
		t.Fatalf("sampling request's _meta %v, want the call's trace", params.Meta)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hello back"},"model":"m"}}`, m.ID)
	h.Post(t, sid, []byte(answer))
	ps.NextMessage(t)
	ps.WaitEnd(t)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var client, server *tracepb.Span
	for _, sp := range rcv.Spans() {
		switch {
		case sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && sp.GetName() == "sampling/createMessage":
			client = sp.Span
		case sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER && sp.GetName() == "tools/call sample":
			server = sp.Span
		}
	}
	if client == nil || server == nil {
		t.Fatalf("spans %v: want the call's server span and the request's client span", rcv.Spans())
	}
	if otlptest.TraceID(client) != headerTrace || !strings.Contains(traceparent, otlptest.SpanID(client)) {
		t.Errorf("the request's span (%s) is not the one its _meta names (%s)", otlptest.SpanID(client), traceparent)
	}
	// Under the call's span: its parent is the call's timeout guardrail
	// or the call's span itself.
	byID := map[string]*tracepb.Span{}
	for _, sp := range rcv.Spans() {
		byID[otlptest.SpanID(sp.Span)] = sp.Span
	}
	under := false
	for p := otlptest.ParentID(client); p != "" && byID[p] != nil; p = otlptest.ParentID(byID[p]) {
		under = under || p == otlptest.SpanID(server)
	}
	if !under {
		t.Error("the request's span is not under the call's server span")
	}
}

// withTraceMeta adds a _meta member to any object of params, empty or
// not, and leaves params that have one, or are no object, as they are.
func TestWithTraceMeta(t *testing.T) {
	tid, _ := trace.TraceIDFromHex(metaTrace)
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	tp := `"traceparent":"00-` + metaTrace + `-00f067aa0ba902b7-01"`
	for _, tt := range []struct{ in, want string }{
		{`{}`, `{"_meta":{` + tp + `}}`},
		{`{ }`, `{ "_meta":{` + tp + `}}`},
		{`{"maxTokens":16}`, `{"maxTokens":16,"_meta":{` + tp + `}}`},
		{"{\"a\":1}\n", `{"a":1,"_meta":{` + tp + `}}`},
		{`{"s":"}"}`, `{"s":"}","_meta":{` + tp + `}}`},
		{`{"_meta":{"progressToken":1}}`, `{"_meta":{"progressToken":1}}`},
		{`[1]`, `[1]`},
	} {
		got := string(withTraceMeta(ctx, []byte(tt.in)))
		if got != tt.want || (strings.HasPrefix(got, "{") && !json.Valid([]byte(got))) {
			t.Errorf("withTraceMeta(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

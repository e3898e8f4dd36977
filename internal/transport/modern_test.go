package transport

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// modernBody is a modern request: params with the era's _meta (the
// protocol version and empty client capabilities) plus meta's members.
func modernBody(id any, method string, params map[string]any, meta map[string]any) []byte {
	if params == nil {
		params = map[string]any{}
	}
	m := map[string]any{protocol.MetaProtocolVersion: protocol.Version20260728, protocol.MetaClientCapabilities: map[string]any{}}
	for k, v := range meta {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	params["_meta"] = m
	return th.RPC(id, method, params)
}

// modernHeaders are the headers of a modern request for method on name.
func modernHeaders(method, name string) []string {
	h := []string{"Mcp-Protocol-Version", protocol.Version20260728, protocol.HeaderMethod, method}
	if name != "" {
		h = append(h, protocol.HeaderName, name)
	}
	return h
}

// A modern request is validated in the order of the specification and
// the conformance suite, each failure with its code and HTTP status
// (basic/versioning, basic/transports/streamable-http).
func TestModernValidation(t *testing.T) {
	h := newHarness(t)
	echo := map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	cases := []struct {
		name    string
		body    []byte
		headers []string
		status  int
		code    int
	}{
		{"no protocol version in _meta, a modern header", modernBody(1, "tools/list", nil, map[string]any{protocol.MetaProtocolVersion: nil}),
			modernHeaders("tools/list", ""), http.StatusBadRequest, protocol.CodeInvalidParams},
		{"no client capabilities", modernBody(1, "tools/list", nil, map[string]any{protocol.MetaClientCapabilities: nil}),
			modernHeaders("tools/list", ""), http.StatusBadRequest, protocol.CodeInvalidParams},
		{"a log level that is none", modernBody(1, "tools/list", nil, map[string]any{protocol.MetaLogLevel: "loud"}),
			modernHeaders("tools/list", ""), http.StatusBadRequest, protocol.CodeInvalidParams},
		{"version header differs", modernBody(1, "tools/list", nil, nil),
			[]string{"Mcp-Protocol-Version", "2025-11-25", protocol.HeaderMethod, "tools/list"}, http.StatusBadRequest, protocol.CodeHeaderMismatch},
		{"no Mcp-Method", modernBody(1, "tools/list", nil, nil),
			[]string{"Mcp-Protocol-Version", protocol.Version20260728}, http.StatusBadRequest, protocol.CodeHeaderMismatch},
		{"Mcp-Method differs", modernBody(1, "tools/list", nil, nil),
			modernHeaders("prompts/list", ""), http.StatusBadRequest, protocol.CodeHeaderMismatch},
		{"Mcp-Name differs", modernBody(1, "tools/call", echo, nil),
			modernHeaders("tools/call", "other"), http.StatusBadRequest, protocol.CodeHeaderMismatch},
		{"Mcp-Name Base64 of another name", modernBody(1, "tools/call", echo, nil),
			modernHeaders("tools/call", b64("other")), http.StatusBadRequest, protocol.CodeHeaderMismatch},
		{"unsupported version", modernBody(1, "tools/list", nil, map[string]any{protocol.MetaProtocolVersion: "v999.0.0"}),
			[]string{"Mcp-Protocol-Version", "v999.0.0", protocol.HeaderMethod, "tools/list"}, http.StatusBadRequest, protocol.CodeUnsupportedProtocolVersion},
		{"initialize, removed", modernBody(1, "initialize", nil, nil), modernHeaders("initialize", ""), http.StatusNotFound, protocol.CodeMethodNotFound},
		{"ping, removed", modernBody(1, "ping", nil, nil), modernHeaders("ping", ""), http.StatusNotFound, protocol.CodeMethodNotFound},
		{"logging/setLevel, removed", modernBody(1, "logging/setLevel", map[string]any{"level": "debug"}, nil),
			modernHeaders("logging/setLevel", ""), http.StatusNotFound, protocol.CodeMethodNotFound},
		{"resources/subscribe, removed", modernBody(1, "resources/subscribe", map[string]any{"uri": "test://x"}, nil),
			modernHeaders("resources/subscribe", ""), http.StatusNotFound, protocol.CodeMethodNotFound},
		{"resources/unsubscribe, removed", modernBody(1, "resources/unsubscribe", map[string]any{"uri": "test://x"}, nil),
			modernHeaders("resources/unsubscribe", ""), http.StatusNotFound, protocol.CodeMethodNotFound},
		{"unknown method", modernBody(1, "tools/frobnicate", nil, nil), modernHeaders("tools/frobnicate", ""), http.StatusNotFound, protocol.CodeMethodNotFound},
		{"an unknown tool, an error of a method served", modernBody(1, "tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}}, nil),
			modernHeaders("tools/call", "nope"), http.StatusOK, protocol.CodeInvalidParams},
		{"a resource that does not exist", modernBody(1, "resources/read", map[string]any{"uri": "test://missing"}, nil),
			modernHeaders("resources/read", "test://missing"), http.StatusOK, protocol.CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Post(t, "", tc.body, tc.headers...)
			th.WantRPCError(t, r, tc.status, "1", tc.code)
			if r.Header.Get(headerSessionID) != "" {
				t.Errorf("a modern request was given a session id: %s", r.Header.Get(headerSessionID))
			}
		})
	}

	t.Run("a resource that does not exist is named in data.uri", func(t *testing.T) {
		r := h.Post(t, "", modernBody(1, "resources/read", map[string]any{"uri": "test://missing"}, nil), modernHeaders("resources/read", "test://missing")...)
		if !strings.Contains(string(r.Body), `"data":{"uri":"test://missing"}`) {
			t.Fatalf("%s", r)
		}
	})

	t.Run("unsupported version names the supported ones", func(t *testing.T) {
		r := h.Post(t, "", modernBody(1, "tools/list", nil, map[string]any{protocol.MetaProtocolVersion: "v999.0.0"}),
			"Mcp-Protocol-Version", "v999.0.0", protocol.HeaderMethod, "tools/list")
		var env struct {
			Error struct {
				Data struct {
					Supported []string `json:"supported"`
					Requested string   `json:"requested"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil {
			t.Fatal(err)
		}
		if d := env.Error.Data; len(d.Supported) != 1 || d.Supported[0] != protocol.Version20260728 || d.Requested != "v999.0.0" {
			t.Fatalf("data = %+v", d)
		}
	})
}

// A modern request is served without a session: a session id it carries
// is ignored, none is minted, and its result says it is complete, names
// the server, and, for a list, how long it may be cached.
func TestModernStateless(t *testing.T) {
	h := newHarness(t)
	legacy := h.Initialize(t)
	cases := []struct {
		name, method, toolName string
		params                 map[string]any
		sid                    string
		cacheable              bool
	}{
		{"tools/call", "tools/call", "echo", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, "", false},
		{"tools/call with a legacy session's id", "tools/call", "echo", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, legacy, false},
		{"tools/call with an unknown session id", "tools/call", "echo", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, "no-such-session", false},
		{"tools/call, the name Base64-encoded", "tools/call", "=?base64?ZWNobw==?=", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}, "", false},
		{"tools/list", "tools/list", "", nil, "", true},
		{"resources/templates/list", "resources/templates/list", "", nil, "", true},
		{"prompts/list", "prompts/list", "", nil, "", true},
		{"server/discover", "server/discover", "", nil, "", true},
		{"server/discover with a legacy session's id", "server/discover", "", nil, legacy, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Post(t, tc.sid, modernBody("a", tc.method, tc.params, nil), modernHeaders(tc.method, tc.toolName)...)
			if r.Status != http.StatusOK {
				t.Fatalf("%s", r)
			}
			if sid := r.Header.Get(headerSessionID); sid != "" {
				t.Errorf("Mcp-Session-Id %q on a modern answer", sid)
			}
			var res struct {
				ResultType string  `json:"resultType"`
				TTL        *int64  `json:"ttlMs"`
				Scope      *string `json:"cacheScope"`
				Meta       map[string]struct {
					Name string `json:"name"`
				} `json:"_meta"`
			}
			if err := json.Unmarshal(th.ResultOf(t, r, `"a"`), &res); err != nil {
				t.Fatal(err)
			}
			if res.ResultType != protocol.ResultComplete {
				t.Errorf("resultType %q", res.ResultType)
			}
			if res.Meta[protocol.MetaServerInfo].Name != "transport-test" {
				t.Errorf("_meta = %+v, want serverInfo", res.Meta)
			}
			switch {
			case tc.cacheable && (res.TTL == nil || *res.TTL != 0 || res.Scope == nil || *res.Scope != "private"):
				t.Errorf("cache hint ttlMs %v cacheScope %v, want 0 and private", res.TTL, res.Scope)
			case !tc.cacheable && (res.TTL != nil || res.Scope != nil):
				t.Errorf("a %s result with a cache hint", tc.method)
			}
		})
	}
	if n := h.tr.Sessions().Len(); n != 1 {
		t.Fatalf("%d client sessions after modern requests, want the legacy one alone", n)
	}
}

// server/discover says what a modern request may name and what is
// served to it (server/discover): the modern revisions, the same list
// -32022 gives; prompts, since prompts/list answers; and the changes a
// subscriptions/listen hears of: tools and resource lists and resource
// updates, but no prompt list, which changes only with federation
// (docs/adr/0054-listen-across-replicas.md). A legacy session has
// initialize's answer and no server/discover.
func TestModernDiscover(t *testing.T) {
	h := newHarness(t)
	r := h.Post(t, "", modernBody(1, "server/discover", nil, nil), modernHeaders("server/discover", "")...)
	var res struct {
		SupportedVersions []string                           `json:"supportedVersions"`
		Capabilities      map[string]map[string]any          `json:"capabilities"`
		Meta              map[string]protocol.Implementation `json:"_meta"`
	}
	if err := json.Unmarshal(th.ResultOf(t, r, "1"), &res); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.SupportedVersions, []string{protocol.Version20260728}) {
		t.Errorf("supportedVersions %v", res.SupportedVersions)
	}
	want := map[string]map[string]any{"tools": {"listChanged": true}, "resources": {"listChanged": true, "subscribe": true}, "prompts": {}}
	for c, members := range want {
		if !maps.Equal(res.Capabilities[c], members) {
			t.Errorf("capabilities.%s = %v, want %v", c, res.Capabilities[c], members)
		}
	}
	if info := res.Meta[protocol.MetaServerInfo]; info.Name != "transport-test" || info.Version != "test" {
		t.Errorf("serverInfo %+v", info)
	}
	// -32022 names the same versions.
	bad := h.Post(t, "", modernBody(2, "server/discover", nil, map[string]any{protocol.MetaProtocolVersion: "2099-01-01"}),
		"Mcp-Protocol-Version", "2099-01-01", protocol.HeaderMethod, "server/discover")
	var e struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bad.Body, &e); err != nil || e.Error.Code != protocol.CodeUnsupportedProtocolVersion || !slices.Equal(e.Error.Data.Supported, res.SupportedVersions) {
		t.Errorf("unsupported version: %s", bad)
	}
	sid := h.Initialize(t)
	th.WantRPCError(t, h.Post(t, sid, th.RPC(3, "server/discover", map[string]any{})), http.StatusOK, "3", protocol.CodeMethodNotFound)
}

// A notification of the modern era is accepted and reaches no legacy
// session, even one whose id it carries: a notifications/cancelled
// naming a legacy request in flight does not cancel it.
func TestModernNotificationReachesNoSession(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := h.PostAsync(t, ctx, sid, th.ToolCall(7, "block", map[string]any{"key": "k"}, nil))
	b := h.Fx.Block("k")
	b.WaitStarted(t)
	r := h.Post(t, sid, modernBody(nil, "notifications/cancelled", map[string]any{"requestId": 7}, nil), modernHeaders("notifications/cancelled", "")...)
	if r.Status != http.StatusAccepted {
		t.Fatalf("modern notification: %s", r)
	}
	b.Release()
	if text, _ := th.ToolText(t, th.ResultOf(t, th.WaitReply(t, call), "7")); text != "released k" {
		t.Fatalf("the legacy call answered %q: the modern notification reached its session", text)
	}
}

// Notifications that relate to a modern request go on its response
// stream, without event ids (the era has no resumption), then its
// response; closing that stream cancels the request.
func TestModernStream(t *testing.T) {
	h := newHarness(t)
	t.Run("progress, then the response", func(t *testing.T) {
		body := modernBody(1, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"n": 2}}, map[string]any{"progressToken": "p"})
		r := h.Post(t, "", body, modernHeaders("tools/call", "progress")...)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q: %s", ct, r)
		}
		evs := th.ParseSSE(r.Body)
		if len(evs) != 3 {
			t.Fatalf("%d events, want 2 progress and the response: %s", len(evs), r)
		}
		for i, ev := range evs {
			if ev.HasID {
				t.Errorf("event %d has an id", i)
			}
		}
		th.ResultFromMessage(t, []byte(evs[2].Data), "1")
	})
	t.Run("closing the stream cancels the request", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		body := modernBody(2, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "m"}}, map[string]any{"progressToken": "p"})
		req := h.NewRequest(t, ctx, http.MethodPost, "", strings.NewReader(string(body)), modernHeaders("tools/call", "block")...)
		res, err := h.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		c := th.NewSSEConn(res, cancel)
		c.Next(t) // the "started" progress notification
		c.Close()
		select {
		case <-h.Fx.Block("m").Cancelled:
		case <-time.After(th.WaitLong):
			t.Fatal("the handler was not cancelled when its stream closed")
		}
	})
}

// A modern request asks for log messages with _meta logLevel; without it
// none is sent.
func TestModernLogLevel(t *testing.T) {
	h := newHarness(t)
	for _, logs := range []bool{false, true} {
		rec := httptest.NewRecorder()
		ex := &modernExchange{t: h.tr, w: rec, id: protocol.ID("1"), sseOK: true, logs: logs}
		if err := ex.Notify(context.Background(), protocol.NotificationMessage, map[string]any{"level": "info", "data": "x"}); err != nil {
			t.Fatal(err)
		}
		if sent := strings.Contains(rec.Body.String(), "notifications/message"); sent != logs {
			t.Errorf("logLevel set %v: message sent %v", logs, sent)
		}
	}
}

// The server sends a modern client no request of its own: a tool that
// asks for sampling gets an error, which its call reports.
func TestModernNoServerRequests(t *testing.T) {
	h := newHarness(t)
	r := h.Post(t, "", modernBody(1, "tools/call", map[string]any{"name": "sample", "arguments": map[string]any{"prompt": "p"}}, nil), modernHeaders("tools/call", "sample")...)
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), "sampling/createMessage\",\"params") {
		t.Fatalf("%s", r)
	}
	if !strings.Contains(string(r.Body), "the server sends the client no requests") {
		t.Fatalf("the call does not say why it failed: %s", r)
	}
}

// A modern tools/call of a tool that mirrors an argument into a header
// (x-mcp-header) must send that header with the argument's value, and
// none without the argument (basic/transports/streamable-http, "Custom
// Headers from Tool Parameters"); a legacy call is not checked.
func TestModernParamHeaders(t *testing.T) {
	route := handlers.Tool{
		Name: "route", Description: "Answers with its region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`),
		Handler: func(_ context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			return handlers.TextResult("routed " + string(call.Arguments)), nil
		},
	}
	h := newHarness(t, func(c *harnessConfig) { c.Tools = []handlers.Tool{route} })
	withRegion := map[string]any{"name": "route", "arguments": map[string]any{"region": "eu-west"}}
	without := map[string]any{"name": "route", "arguments": map[string]any{}}
	cases := []struct {
		name   string
		params map[string]any
		header []string
		status int
	}{
		{"header matches", withRegion, []string{"Mcp-Param-Region", "eu-west"}, http.StatusOK},
		{"header Base64-encoded", withRegion, []string{"Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?="}, http.StatusOK},
		{"header missing", withRegion, nil, http.StatusBadRequest},
		{"header differs", withRegion, []string{"Mcp-Param-Region", "us-east"}, http.StatusBadRequest},
		{"no argument, no header", without, nil, http.StatusOK},
		{"no argument, a header", without, []string{"Mcp-Param-Region", "eu-west"}, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Post(t, "", modernBody(1, "tools/call", tc.params, nil), append(modernHeaders("tools/call", "route"), tc.header...)...)
			if tc.status == http.StatusOK {
				if r.Status != http.StatusOK || strings.Contains(string(r.Body), `"error"`) {
					t.Fatalf("%s", r)
				}
				return
			}
			th.WantRPCError(t, r, tc.status, "1", protocol.CodeHeaderMismatch)
		})
	}
	t.Run("a legacy call is not checked", func(t *testing.T) {
		sid := h.Initialize(t)
		r := h.Post(t, sid, th.ToolCall(1, "route", map[string]any{"region": "eu-west"}, nil), "Mcp-Param-Region", "us-east")
		if text, _ := th.ToolText(t, th.ResultOf(t, r, "1")); !strings.HasPrefix(text, "routed") {
			t.Fatalf("%s", r)
		}
	})
}

// A modern request for a tool that needs client capabilities it did not
// declare is refused before the tool runs: 400/-32021, naming them in
// data.requiredCapabilities (basic/index, "Client Capabilities").
func TestModernMissingCapability(t *testing.T) {
	ran := 0
	needs := handlers.Tool{
		Name: "needs", Description: "Needs sampling and roots.", ClientCapabilities: []string{"sampling", "roots"},
		Handler: func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
			ran++
			return handlers.TextResult("ran"), nil
		},
	}
	h := newHarness(t, func(c *harnessConfig) { c.Tools = []handlers.Tool{needs} })
	call := map[string]any{"name": "needs", "arguments": map[string]any{}}
	r := h.Post(t, "", modernBody(1, "tools/call", call, map[string]any{protocol.MetaClientCapabilities: map[string]any{"sampling": map[string]any{}}}),
		modernHeaders("tools/call", "needs")...)
	th.WantRPCError(t, r, http.StatusBadRequest, "1", protocol.CodeMissingClientCapability)
	if !strings.Contains(string(r.Body), `"requiredCapabilities":{"roots":{}}`) {
		t.Errorf("data does not name the missing capability: %s", r)
	}
	if ran != 0 {
		t.Fatal("the tool ran without the capabilities it needs")
	}
	caps := map[string]any{"sampling": map[string]any{}, "roots": map[string]any{}}
	r = h.Post(t, "", modernBody(2, "tools/call", call, map[string]any{protocol.MetaClientCapabilities: caps}), modernHeaders("tools/call", "needs")...)
	if text, _ := th.ToolText(t, th.ResultOf(t, r, "2")); text != "ran" {
		t.Fatalf("with the capabilities declared: %s", r)
	}
}

// One principal has at most MaxRequestsPerPrincipal modern requests in
// flight on a replica: one more gets 429 with Retry-After, and a place
// frees when a request ends.
func TestModernRequestsPerPrincipal(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.MaxRequestsPerPrincipal = 2 }))
	block := func(id int, key string) <-chan *th.Reply {
		body := modernBody(id, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": key}}, nil)
		return h.PostAsync(t, context.Background(), "", body, modernHeaders("tools/call", "block")...)
	}
	first, second := block(1, "p1"), block(2, "p2")
	h.Fx.Block("p1").WaitStarted(t)
	h.Fx.Block("p2").WaitStarted(t)
	r := h.Post(t, "", modernBody(3, "tools/list", nil, nil), modernHeaders("tools/list", "")...)
	th.WantRPCError(t, r, http.StatusTooManyRequests, "3", protocol.CodeInvalidRequest)
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	h.Fx.Block("p1").Release()
	th.ResultOf(t, th.WaitReply(t, first), "1")
	if r := h.Post(t, "", modernBody(4, "tools/list", nil, nil), modernHeaders("tools/list", "")...); r.Status != http.StatusOK {
		t.Fatalf("after one ended: %s", r)
	}
	h.Fx.Block("p2").Release()
	th.ResultOf(t, th.WaitReply(t, second), "2")
	h.tr.inflightMu.Lock()
	defer h.tr.inflightMu.Unlock()
	if len(h.tr.inflight) != 0 {
		t.Fatalf("counts left behind: %v", h.tr.inflight)
	}
}

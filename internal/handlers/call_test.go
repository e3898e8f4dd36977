package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// callResult runs tools/call and returns the result, which must not be a
// JSON-RPC error, along with the request and the result's wire form.
func callResult(t *testing.T, e *env, params string) (Outcome, *protocol.CallToolResult, map[string]json.RawMessage) {
	t.Helper()
	out, res, err := e.handle(protocol.MethodToolsCall, params)
	if err != nil {
		t.Fatalf("tools/call %s: %v", params, err)
	}
	r, ok := res.(*protocol.CallToolResult)
	if !ok || r == nil {
		t.Fatalf("tools/call result is %T", res)
	}
	b, err := protocol.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	m := members(t, b)
	if c := string(m["content"]); c == "" || c == "null" {
		t.Fatalf("content is %q in %s", c, b)
	}
	return out, r, m
}

func resultText(t *testing.T, r *protocol.CallToolResult) string {
	t.Helper()
	if len(r.Content) == 0 || r.Content[0].Type != protocol.ContentText {
		t.Fatalf("result has no text block: %+v", r)
	}
	return r.Content[0].Text
}

// mustNotRun is a tool whose handler fails the test if called.
func mustNotRun(t *testing.T, name, schema string) Tool {
	return Tool{
		Name:        name,
		Description: "must not run",
		InputSchema: json.RawMessage(schema),
		Handler: func(_ context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
			t.Errorf("handler of %s called with %s", name, call.Arguments)
			return TextResult("ran"), nil
		},
	}
}

func TestCallToolByName(t *testing.T) {
	var got *ToolCall
	spy := Tool{
		Name:        "memory.store",
		Description: "stores",
		InputSchema: json.RawMessage(echoSchema),
		Handler: func(_ context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
			got = call
			return TextResult("stored " + string(call.Arguments)), nil
		},
	}
	e := newEnv(t, spy, echoTool("text.echo"))
	for _, name := range []string{"memory_store", "memory.store", `memory\u005fstore`, `memory\u002estore`} {
		t.Run(name, func(t *testing.T) {
			got = nil
			out, r, m := callResult(t, e, `{"name":"`+name+`","arguments":{"text":"hi"}}`)
			if r.IsError || resultText(t, r) != `stored {"text":"hi"}` {
				t.Fatalf("result = %+v", r)
			}
			if _, ok := m["isError"]; ok {
				t.Errorf("successful result carries isError")
			}
			if out.Tool != "memory.store" || out.ToolError {
				t.Errorf("out.Tool = %q, out.ToolError = %v", out.Tool, out.ToolError)
			}
			if got == nil || got.Name != "memory.store" || got.Session != e.sess || got.Peer != e.peer {
				t.Errorf("handler got %+v", got)
			}
		})
	}
	t.Run("Typed echo", func(t *testing.T) {
		_, r, _ := callResult(t, e, `{"name":"text_echo","arguments":{"text":"h\u00e9llo \"q\""}}`)
		if r.IsError || resultText(t, r) != `héllo "q"` {
			t.Fatalf("result = %+v", r)
		}
	})
}

func TestCallToolProtocolErrors(t *testing.T) {
	e := newEnv(t, mustNotRun(t, "text.echo", echoSchema))
	tests := []struct {
		name     string
		params   string
		wantText string // substring of the message
	}{
		{"unknown tool", `{"name":"no_such_tool","arguments":{}}`, "no_such_tool"},
		{"unknown dotted tool", `{"name":"text.echo2"}`, "text.echo2"},
		{"exposed name with other separator", `{"name":"text-echo"}`, "text-echo"},
		{"missing name", `{"arguments":{"text":"x"}}`, "name"},
		{"empty name", `{"name":""}`, "name"},
		{"absent params", ``, "name"},
		{"name not a string", `{"name":5}`, `"name"`},
		{"name an object", `{"name":{"a":1}}`, `"name"`},
		{"meta not an object", `{"name":"text_echo","arguments":{"text":"x"},"_meta":"p"}`, "_meta"},
		// A name of the caller's choosing is echoed bounded.
		{"huge unknown name", `{"name":"` + strings.Repeat("n", 1<<20) + `"}`, "(1048576 bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, res, err := e.handle(protocol.MethodToolsCall, tc.params)
			perr := wantProtocolError(t, res, err, protocol.CodeInvalidParams)
			if !strings.Contains(perr.Message, tc.wantText) {
				t.Errorf("message %.300q does not contain %q", perr.Message, tc.wantText)
			}
			if len(perr.Message) > 1024 {
				t.Errorf("message is %d bytes long", len(perr.Message))
			}
			if out.ToolError {
				t.Errorf("ToolError set for a protocol error")
			}
		})
	}
}

func TestCallToolInvalidArguments(t *testing.T) {
	nested := `{"type":"object","properties":{"opts":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}},"a/b":{"type":"string"}},"additionalProperties":false}`
	e := newEnv(t,
		mustNotRun(t, "text.echo", echoSchema),
		mustNotRun(t, "deep.tool", nested),
		mustNotRun(t, "no.args", ""),
	)
	tests := []struct {
		name string
		tool string
		args string // raw arguments member; "" = absent
		want []string
	}{
		{"wrong type", "text_echo", `{"text":5}`, []string{"text_echo", "/text"}},
		{"wrong type via canonical name", "text.echo", `{"text":true}`, []string{"/text"}},
		{"missing required", "text_echo", `{}`, []string{"text"}},
		{"absent arguments", "text_echo", ``, []string{"text"}},
		{"null arguments", "text_echo", `null`, []string{"text"}},
		{"nested field", "deep_tool", `{"opts":{"n":"x"}}`, []string{"/opts/n"}},
		{"nested minimum", "deep_tool", `{"opts":{"n":0}}`, []string{"/opts/n"}},
		{"escaped pointer", "deep_tool", `{"a/b":1}`, []string{"/a~1b"}},
		{"additional property", "deep_tool", `{"extra":1}`, []string{"extra"}},
		{"no-argument tool given arguments", "no_args", `{"x":1}`, []string{"x"}},
		{"two problems", "deep_tool", `{"opts":{"n":"x"},"a/b":2}`, []string{"/opts/n", "/a~1b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := `{"name":"` + tc.tool + `"`
			if tc.args != "" {
				params += `,"arguments":` + tc.args
			}
			params += "}"
			out, r, m := callResult(t, e, params)
			if !r.IsError || string(m["isError"]) != "true" {
				t.Fatalf("result is not an error: %+v", r)
			}
			text := resultText(t, r)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("message %q does not contain %q", text, w)
				}
			}
			if !out.ToolError || out.Tool == "" {
				t.Errorf("out.Tool = %q, out.ToolError = %v", out.Tool, out.ToolError)
			}
		})
	}
	// Non-object arguments break the tools/call params shape: a -32602 or
	// an isError result both tell the client; the handler must not run.
	for _, args := range []string{`["x"]`, `"x"`, `5`, `true`} {
		t.Run("arguments "+args, func(t *testing.T) {
			out, res, err := e.handle(protocol.MethodToolsCall, `{"name":"text_echo","arguments":`+args+`}`)
			if err != nil {
				wantProtocolError(t, res, err, protocol.CodeInvalidParams)
				return
			}
			r := res.(*protocol.CallToolResult)
			if !r.IsError || !out.ToolError || !strings.Contains(resultText(t, r), "object") {
				t.Fatalf("result = %+v", r)
			}
		})
	}
	t.Run("message is stable", func(t *testing.T) {
		params := `{"name":"deep_tool","arguments":{"opts":{"n":"x"},"a/b":2,"extra":true}}`
		_, r1, _ := callResult(t, e, params)
		for range 20 {
			if _, r2, _ := callResult(t, e, params); resultText(t, r2) != resultText(t, r1) {
				t.Fatalf("message changed: %q vs %q", resultText(t, r1), resultText(t, r2))
			}
		}
	})
}

func TestCallToolTyped(t *testing.T) {
	type args struct {
		Text  string   `json:"text"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	}
	var got args
	var calls int
	tool := Tool{
		Name:        "typed",
		Description: "typed",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"count":{},"tags":{"type":"array"}}}`),
		Handler: Typed(func(_ context.Context, _ *ToolCall, in args) (*protocol.CallToolResult, error) {
			calls++
			got = in
			return TextResult("ok"), nil
		}),
	}
	e := newEnv(t, tool)

	_, r, _ := callResult(t, e, `{"name":"typed","arguments":{"text":"a","count":3,"tags":["x","y"]}}`)
	if r.IsError || got.Text != "a" || got.Count != 3 || len(got.Tags) != 2 || got.Tags[1] != "y" {
		t.Fatalf("result %+v, handler got %+v", r, got)
	}

	got = args{Text: "stale"}
	if _, r, _ = callResult(t, e, `{"name":"typed"}`); r.IsError || got.Text != "" || got.Count != 0 {
		t.Fatalf("absent arguments: result %+v, handler got %+v", r, got)
	}

	// The schema allows any count; the Go type does not: an isError result
	// naming the tool, and the function is not called.
	calls = 0
	_, r, _ = callResult(t, e, `{"name":"typed","arguments":{"count":"three"}}`)
	if !r.IsError || !strings.Contains(resultText(t, r), "typed") || calls != 0 {
		t.Fatalf("decode failure: result %+v, calls %d", r, calls)
	}
}

func TestCallToolHandlerOutcomes(t *testing.T) {
	wrapped := &protocol.Error{Code: protocol.CodeInternalError, Message: "wrapped"}
	e := newEnv(t,
		simpleTool("plain.error", TextResult("ignored"), errors.New("disk full: /var/x")),
		simpleTool("protocol.error", nil, protocol.Errorf(-32042, "needs elicitation").WithData(map[string]int{"n": 1})),
		simpleTool("wrapped.error", nil, fmt.Errorf("context: %w", wrapped)),
		simpleTool("nil.result", nil, nil),
		simpleTool("nil.content", &protocol.CallToolResult{}, nil),
		simpleTool("tool.reports.error", &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("nope")}, IsError: true}, nil),
		simpleTool("structured", &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent(`{"a":1}`)}, StructuredContent: json.RawMessage(`{"a":1}`)}, nil),
	)

	t.Run("plain error is an isError result", func(t *testing.T) {
		out, r, _ := callResult(t, e, `{"name":"plain_error"}`)
		if !r.IsError || resultText(t, r) != "disk full: /var/x" || len(r.Content) != 1 {
			t.Fatalf("result = %+v", r)
		}
		if !out.ToolError || out.Tool != "plain.error" {
			t.Errorf("out.Tool = %q, out.ToolError = %v", out.Tool, out.ToolError)
		}
	})
	t.Run("protocol error is returned as is", func(t *testing.T) {
		out, res, err := e.handle(protocol.MethodToolsCall, `{"name":"protocol_error"}`)
		perr := wantProtocolError(t, res, err, -32042)
		if perr.Message != "needs elicitation" || string(perr.Data) != `{"n":1}` {
			t.Errorf("error = %+v", perr)
		}
		if out.Tool != "protocol.error" {
			t.Errorf("out.Tool = %q", out.Tool)
		}
	})
	// A *protocol.Error inside another error (a client's error answer to
	// sampling, wrapped by the tool) is the tool's failure: the model reads
	// it; it must not become the JSON-RPC error of tools/call.
	t.Run("wrapped protocol error is a tool error", func(t *testing.T) {
		_, res, err := e.handle(protocol.MethodToolsCall, `{"name":"wrapped_error"}`)
		if err != nil {
			t.Fatalf("error = %v, want an isError result", err)
		}
		r, ok := res.(*protocol.CallToolResult)
		if !ok || !r.IsError || !strings.Contains(r.Content[0].Text, wrapped.Message) {
			t.Errorf("result = %+v, want isError carrying %q", res, wrapped.Message)
		}
	})
	t.Run("nil result is an internal error", func(t *testing.T) {
		_, res, err := e.handle(protocol.MethodToolsCall, `{"name":"nil_result"}`)
		if err == nil {
			t.Fatalf("succeeded with %#v", res)
		}
		var perr *protocol.Error
		if errors.As(err, &perr) {
			t.Fatalf("got *protocol.Error %+v; want a plain error (the transport sends -32603)", perr)
		}
		if !strings.Contains(err.Error(), "nil.result") {
			t.Errorf("error %q does not name the tool", err)
		}
	})
	t.Run("nil content is an empty array", func(t *testing.T) {
		out, r, m := callResult(t, e, `{"name":"nil_content"}`)
		if string(m["content"]) != "[]" || r.IsError || out.ToolError {
			t.Fatalf("result = %+v (%s)", r, m["content"])
		}
	})
	t.Run("isError from the handler sets ToolError", func(t *testing.T) {
		out, r, _ := callResult(t, e, `{"name":"tool_reports_error"}`)
		if !r.IsError || !out.ToolError || resultText(t, r) != "nope" {
			t.Fatalf("result = %+v, out.ToolError %v", r, out.ToolError)
		}
	})
	t.Run("structured content passes through", func(t *testing.T) {
		_, _, m := callResult(t, e, `{"name":"structured"}`)
		if string(m["structuredContent"]) != `{"a":1}` {
			t.Fatalf("structuredContent = %s", m["structuredContent"])
		}
	})
}

func TestCallToolPeerRequest(t *testing.T) {
	tool := Tool{
		Name:        "ask.roots",
		Description: "asks the client for its roots",
		Handler: func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
			raw, err := call.Peer.Request(ctx, protocol.MethodRootsList, struct{}{})
			if err != nil {
				return nil, err
			}
			return TextResult(string(raw)), nil
		},
	}
	e := newEnv(t, tool)
	_, r, _ := callResult(t, e, `{"name":"ask_roots"}`)
	if r.IsError || resultText(t, r) != `{"roots":[{"uri":"file:///r"}]}` {
		t.Fatalf("result = %+v", r)
	}
	if len(e.peer.requests) != 1 || e.peer.requests[0].method != protocol.MethodRootsList {
		t.Fatalf("peer requests = %+v", e.peer.requests)
	}
	// A JSON-RPC error answer from the client comes back as *protocol.Error
	// and, returned by the handler, becomes the call's error.
	e.peer.answer = nil
	_, res, err := e.handle(protocol.MethodToolsCall, `{"name":"ask_roots"}`)
	wantProtocolError(t, res, err, protocol.CodeMethodNotFound)
}

// progressTool reports progress once and returns.
func progressTool(total float64) Tool {
	return Tool{
		Name:        "slow.job",
		Description: "reports progress",
		Handler: func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
			if err := call.Progress(ctx, 1, total, "half way"); err != nil {
				return nil, err
			}
			return TextResult("done"), nil
		},
	}
}

func TestToolCallProgress(t *testing.T) {
	tests := []struct {
		name      string
		meta      string // raw _meta member; "" = absent
		wantToken string // raw token expected; "" = no notification
	}{
		{"no meta", "", ""},
		{"empty meta", `{}`, ""},
		{"meta without token", `{"other":1}`, ""},
		{"integer token", `{"progressToken":7}`, `7`},
		{"string token", `{"progressToken":"abc"}`, `"abc"`},
		{"numeric string token", `{"progressToken":"7"}`, `"7"`},
		{"large integer token", `{"progressToken":12345678901234567890}`, `12345678901234567890`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, progressTool(10))
			params := `{"name":"slow_job"`
			if tc.meta != "" {
				params += `,"_meta":` + tc.meta
			}
			params += "}"
			_, r, _ := callResult(t, e, params)
			if r.IsError {
				t.Fatalf("result = %+v", r)
			}
			notes := e.peer.notifications()
			if tc.wantToken == "" {
				if len(notes) != 0 {
					t.Fatalf("sent %+v without a progress token", notes)
				}
				return
			}
			if len(notes) != 1 || notes[0].method != protocol.NotificationProgress {
				t.Fatalf("notifications = %+v", notes)
			}
			m := members(t, notes[0].params)
			if string(m["progressToken"]) != tc.wantToken {
				t.Errorf("progressToken = %s, want %s (in %s)", m["progressToken"], tc.wantToken, notes[0].params)
			}
			if string(m["progress"]) != "1" || string(m["total"]) != "10" || string(m["message"]) != `"half way"` {
				t.Errorf("params = %s", notes[0].params)
			}
		})
	}
	t.Run("unknown total is omitted", func(t *testing.T) {
		e := newEnv(t, progressTool(0))
		callResult(t, e, `{"name":"slow_job","_meta":{"progressToken":1}}`)
		notes := e.peer.notifications()
		if len(notes) != 1 {
			t.Fatalf("notifications = %+v", notes)
		}
		if _, ok := members(t, notes[0].params)["total"]; ok {
			t.Errorf("total present: %s", notes[0].params)
		}
	})
	t.Run("send failure is returned", func(t *testing.T) {
		sendErr := errors.New("stream closed")
		var got error
		tool := Tool{Name: "p", Description: "p", Handler: func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
			got = call.Progress(ctx, 1, 2, "")
			return TextResult("x"), nil
		}}
		e := newEnv(t, tool)
		e.peer.notifyErr = sendErr
		callResult(t, e, `{"name":"p","_meta":{"progressToken":"t"}}`)
		if !errors.Is(got, sendErr) {
			t.Fatalf("Progress error = %v, want one wrapping %v", got, sendErr)
		}
	})
}

// TestToolCallProgressInvalidToken: progressToken is a string or a number;
// any other token asks for nothing, and a notification echoing it would
// violate the schema.
func TestToolCallProgressInvalidToken(t *testing.T) {
	for _, tok := range []string{`null`, `true`, `{}`, `["a"]`} {
		t.Run(tok, func(t *testing.T) {
			e := newEnv(t, progressTool(10))
			callResult(t, e, `{"name":"slow_job","_meta":{"progressToken":`+tok+`}}`)
			if notes := e.peer.notifications(); len(notes) != 0 {
				t.Fatalf("sent %s for progress token %s", notes[0].params, tok)
			}
		})
	}
}

func TestToolCallLog(t *testing.T) {
	tests := []struct {
		session  protocol.LoggingLevel
		level    protocol.LoggingLevel
		wantSent bool
	}{
		{protocol.LevelInfo, protocol.LevelDebug, false},
		{protocol.LevelInfo, protocol.LevelInfo, true},
		{protocol.LevelInfo, protocol.LevelError, true},
		{protocol.LevelError, protocol.LevelWarning, false},
		{protocol.LevelError, protocol.LevelEmergency, true},
		{protocol.LevelDebug, protocol.LevelDebug, true},
		{protocol.LevelEmergency, protocol.LevelAlert, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s at %s", tc.level, tc.session), func(t *testing.T) {
			tool := Tool{Name: "logger", Description: "logs", Handler: func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
				if err := call.Log(ctx, tc.level, "db", map[string]any{"msg": "m", "n": 1}); err != nil {
					return nil, err
				}
				return TextResult("x"), nil
			}}
			e := newEnv(t, tool)
			e.sess.level = tc.session
			callResult(t, e, `{"name":"logger"}`)
			notes := e.peer.notifications()
			if !tc.wantSent {
				if len(notes) != 0 {
					t.Fatalf("sent %+v", notes)
				}
				return
			}
			if len(notes) != 1 || notes[0].method != protocol.NotificationMessage {
				t.Fatalf("notifications = %+v", notes)
			}
			if want := `{"level":"` + string(tc.level) + `","logger":"db","data":{"msg":"m","n":1}}`; string(notes[0].params) != want {
				t.Errorf("params = %s, want %s", notes[0].params, want)
			}
		})
	}
	t.Run("level set with logging/setLevel applies", func(t *testing.T) {
		tool := Tool{Name: "logger", Description: "logs", Handler: func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
			for _, l := range []protocol.LoggingLevel{protocol.LevelDebug, protocol.LevelWarning, protocol.LevelError} {
				if err := call.Log(ctx, l, "", string(l)); err != nil {
					return nil, err
				}
			}
			return TextResult("x"), nil
		}}
		e := newEnv(t, tool)
		e.ok(t, protocol.MethodLoggingSetLevel, `{"level":"warning"}`)
		callResult(t, e, `{"name":"logger"}`)
		notes := e.peer.notifications()
		if len(notes) != 2 || !strings.Contains(string(notes[0].params), `"warning"`) || !strings.Contains(string(notes[1].params), `"error"`) {
			t.Fatalf("notifications = %+v", notes)
		}
		if strings.Contains(string(notes[0].params), "logger") {
			t.Errorf("empty logger is not omitted: %s", notes[0].params)
		}
	})
}

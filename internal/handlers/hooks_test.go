package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// The decorator rewrites descriptions in tools/list — for tools registered
// before and after it is set — and never the registered tool itself.
func TestToolDecorator(t *testing.T) {
	e := newEnv(t, echoTool("a.one"))
	e.s.Tools().SetDecorator(func(name, desc string) string { return desc + " [" + name + "]" })
	if err := e.s.Tools().Add(echoTool("b.two")); err != nil {
		t.Fatal(err)
	}
	var descs []string
	for params := `{}`; ; {
		res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, params))
		for _, tool := range res.Tools {
			descs = append(descs, tool.Description)
		}
		if res.NextCursor == "" {
			break
		}
		params = `{"cursor":"` + res.NextCursor + `"}`
	}
	if len(descs) != 2 || !strings.HasSuffix(descs[0], " [a.one]") || !strings.HasSuffix(descs[1], " [b.two]") {
		t.Errorf("decorated descriptions = %q", descs)
	}
	if d := e.s.Tools().lookup("a.one").Description; strings.Contains(d, "[") {
		t.Errorf("the registered description changed: %q", d)
	}
}

// The after-call hook sees every handler result, with the call, and its
// return value is what the client gets.
func TestAfterCallHook(t *testing.T) {
	e := newEnv(t, echoTool("a.one"), simpleTool("a.fail", protocol.ToolError("boom"), nil))
	var seen []string
	e.s.SetAfterCall(func(_ context.Context, call *ToolCall, res *protocol.CallToolResult) *protocol.CallToolResult {
		seen = append(seen, call.Name)
		if res.IsError {
			return res
		}
		out := *res
		out.Content = append([]protocol.Content{protocol.TextContent("[hooked]")}, res.Content...)
		return &out
	})
	got := unmarshal[protocol.CallToolResult](t, e.ok(t, protocol.MethodToolsCall, `{"name":"a_one","arguments":{"text":"x"}}`))
	if len(got.Content) < 2 || got.Content[0].Text != "[hooked]" {
		t.Errorf("result = %+v, want the hook's block first", got)
	}
	e.ok(t, protocol.MethodToolsCall, `{"name":"a_fail"}`)
	if strings.Join(seen, ",") != "a.one,a.fail" {
		t.Errorf("hook saw %v", seen)
	}
}

package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// upstreamTool is a tool of group "upstream" answering with its own name.
func upstreamTool(server, name string) Tool {
	canonical := server + "." + name
	return Tool{
		Name: canonical, Description: "tool " + name + " of " + server, Group: "upstream", BareName: name,
		Handler: func(context.Context, *ToolCall) (*protocol.CallToolResult, error) {
			return TextResult(canonical), nil
		},
	}
}

// listedNames is what tools/list shows, across all pages.
func listedNames(t *testing.T, e *env) []string {
	t.Helper()
	var names []string
	cursor := ""
	for {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		_, res, err := e.handle(protocol.MethodToolsList, params)
		if err != nil {
			t.Fatal(err)
		}
		page := res.(*protocol.ListToolsResult)
		for _, tool := range page.Tools {
			names = append(names, tool.Name)
		}
		if cursor = page.NextCursor; cursor == "" {
			return names
		}
	}
}

// TestReplaceGroup: a group is swapped as a whole, the other tools stay,
// and changed is true exactly when tools/list differs.
func TestReplaceGroup(t *testing.T) {
	builtin := Tool{Name: "memory.store", Description: "d", Handler: nopHandler}
	e := newEnv(t, builtin)
	reg := e.s.tools
	steps := []struct {
		name     string
		tools    []Tool
		changed  bool
		errs     int
		wantList string
	}{
		{"first discovery", []Tool{upstreamTool("a", "search"), upstreamTool("b", "fetch")}, true, 0, "memory_store,a_search,b_fetch"},
		{"same tools again", []Tool{upstreamTool("a", "search"), upstreamTool("b", "fetch")}, false, 0, "memory_store,a_search,b_fetch"},
		{"one server gone", []Tool{upstreamTool("a", "search")}, true, 0, "memory_store,a_search"},
		{"collision with a built-in is left out", []Tool{upstreamTool("memory", "store"), upstreamTool("a", "search")}, false, 1, "memory_store,a_search"},
		{"wrong group is left out", []Tool{{Name: "x.y", Description: "d", Handler: nopHandler, Group: "other"}}, true, 1, "memory_store"},
		{"invalid schema is left out", []Tool{func() Tool {
			t := upstreamTool("a", "bad")
			t.InputSchema = []byte(`{"type":"object","properties":{"x":{"type":"nope"}}}`)
			return t
		}()}, false, 1, "memory_store"},
	}
	for _, st := range steps {
		changed, errs := reg.ReplaceGroup("upstream", st.tools)
		if changed != st.changed || len(errs) != st.errs {
			t.Fatalf("%s: changed=%v errs=%v, want changed=%v and %d errors", st.name, changed, errs, st.changed, st.errs)
		}
		if got := strings.Join(listedNames(t, e), ","); got != st.wantList {
			t.Fatalf("%s: tools/list = %s, want %s", st.name, got, st.wantList)
		}
	}
	if _, errs := reg.ReplaceGroup("", nil); len(errs) != 1 {
		t.Fatalf("empty group: errs = %v", errs)
	}
}

// TestECO003_BareNameResolution (INV-MCP-ECO-003): a bare name resolves while one
// server has it, is AMBIGUOUS when several do, and the qualified names
// always resolve.
func TestECO003_BareNameResolution(t *testing.T) {
	e := newEnv(t)
	reg := e.s.tools
	if _, errs := reg.ReplaceGroup("upstream", []Tool{upstreamTool("server-a", "search"), upstreamTool("server-b", "fetch")}); errs != nil {
		t.Fatal(errs)
	}
	call := func(name string) *protocol.CallToolResult {
		t.Helper()
		_, r, _ := callResult(t, e, `{"name":"`+name+`"}`)
		return r
	}
	if got := resultText(t, call("search")); got != "server-a.search" {
		t.Fatalf("bare search ran %q", got)
	}
	if _, errs := reg.ReplaceGroup("upstream", []Tool{upstreamTool("server-a", "search"), upstreamTool("server-b", "search")}); errs != nil {
		t.Fatal(errs)
	}
	r := call("search")
	if !r.IsError || !strings.Contains(resultText(t, r), "server-a_search, server-b_search") {
		t.Fatalf("ambiguous search: %+v", r)
	}
	var gotName string
	var gotCands []string
	e.s.SetAmbiguousTool(func(_ context.Context, name string, cands []string) *protocol.CallToolResult {
		gotName, gotCands = name, cands
		return protocol.ToolError("AMBIGUOUS_TOOL")
	})
	if r := call("search"); resultText(t, r) != "AMBIGUOUS_TOOL" || gotName != "search" || strings.Join(gotCands, ",") != "server-a_search,server-b_search" {
		t.Fatalf("hook: %+v name=%q cands=%v", r, gotName, gotCands)
	}
	for _, name := range []string{"server-a.search", "server-a_search", "server-b.search"} {
		if got := resultText(t, call(name)); got != strings.Replace(name, "_", ".", 1) {
			t.Fatalf("%s ran %q", name, got)
		}
	}
	if _, _, err := e.handle(protocol.MethodToolsCall, `{"name":"fetch"}`); err == nil {
		t.Fatal("fetch is gone but resolved")
	}
}

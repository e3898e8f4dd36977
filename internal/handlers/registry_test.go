package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/toolname"
)

func nopHandler(context.Context, *ToolCall) (*protocol.CallToolResult, error) {
	return TextResult("ok"), nil
}

func TestToolRegistrationErrors(t *testing.T) {
	valid := func(mod func(*Tool)) Tool {
		tool := Tool{Name: "ok.tool", Description: "d", Handler: nopHandler}
		mod(&tool)
		return tool
	}
	tests := []struct {
		name    string
		tool    Tool
		wantErr string // substring of the error
	}{
		{"empty name", valid(func(t *Tool) { t.Name = "" }), "empty"},
		{"empty segment", valid(func(t *Tool) { t.Name = "a..b" }), "segment"},
		{"leading dot", valid(func(t *Tool) { t.Name = ".a" }), "segment"},
		{"trailing dot", valid(func(t *Tool) { t.Name = "a." }), "segment"},
		{"space", valid(func(t *Tool) { t.Name = "a b" }), "segment"},
		{"slash", valid(func(t *Tool) { t.Name = "a/b" }), "segment"},
		{"non-ASCII", valid(func(t *Tool) { t.Name = "café" }), "segment"},
		{"missing description", valid(func(t *Tool) { t.Description = "" }), "description"},
		{"nil handler", valid(func(t *Tool) { t.Handler = nil }), "handler"},
		{"schema array", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`[]`) }), "inputSchema"},
		{"schema string", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`"object"`) }), "inputSchema"},
		{"schema true", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`true`) }), "inputSchema"},
		{"schema type string", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`{"type":"string"}`) }), `"type" must be "object"`},
		{"schema without type", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`{"properties":{}}`) }), `"type" must be "object"`},
		{"schema invalid JSON", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`{"type":"object"`) }), "inputSchema"},
		{"schema invalid keyword value", valid(func(t *Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`)
		}), "inputSchema"},
		{"schema properties not an object", valid(func(t *Tool) { t.InputSchema = json.RawMessage(`{"type":"object","properties":5}`) }), "inputSchema"},
		{"x-mcp-header on an object", valid(func(t *Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`)
		}), "x-mcp-header"},
		{"x-mcp-header repeated", valid(func(t *Tool) {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`)
		}), "x-mcp-header"},
		{"outputSchema array", valid(func(t *Tool) { t.OutputSchema = json.RawMessage(`[]`) }), "outputSchema"},
		{"outputSchema type string", valid(func(t *Tool) { t.OutputSchema = json.RawMessage(`{"type":"string"}`) }), "outputSchema"},
		{"outputSchema invalid JSON", valid(func(t *Tool) { t.OutputSchema = json.RawMessage(`{"type":`) }), "outputSchema"},
		{"outputSchema does not compile", valid(func(t *Tool) {
			t.OutputSchema = json.RawMessage(`{"type":"object","required":"success"}`)
		}), "outputSchema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := NewToolRegistry("_")
			if err != nil {
				t.Fatal(err)
			}
			err = reg.Add(tc.tool)
			if err == nil {
				t.Fatalf("Add(%q) succeeded", tc.tool.Name)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantErr)
			}
			if reg.Len() != 0 {
				t.Errorf("Len = %d after a failed Add", reg.Len())
			}
		})
	}
}

func TestToolRegistrationConflicts(t *testing.T) {
	t.Run("duplicate canonical name", func(t *testing.T) {
		reg, _ := NewToolRegistry("_")
		if err := reg.Add(echoTool("memory.store")); err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(echoTool("memory.store")); err == nil {
			t.Fatal("second Add of memory.store succeeded")
		}
		if reg.Len() != 1 {
			t.Fatalf("Len = %d", reg.Len())
		}
	})
	t.Run("duplicate within one Add", func(t *testing.T) {
		reg, _ := NewToolRegistry("_")
		if err := reg.Add(echoTool("x"), echoTool("x")); err == nil {
			t.Fatal("Add(x, x) succeeded")
		}
		if reg.Len() != 0 {
			t.Fatalf("Len = %d", reg.Len())
		}
	})
	t.Run("exposed name collision", func(t *testing.T) {
		reg, _ := NewToolRegistry("_")
		if err := reg.Add(echoTool("a_b.c")); err != nil {
			t.Fatal(err)
		}
		err := reg.Add(echoTool("a.b_c"))
		if err == nil {
			t.Fatal("a.b_c registered although a_b.c already exposes a_b_c")
		}
		if !strings.Contains(err.Error(), "a_b_c") {
			t.Errorf("error %q does not name the exposed name", err)
		}
	})
	t.Run("canonical equal to another's exposed name", func(t *testing.T) {
		reg, _ := NewToolRegistry("_")
		if err := reg.Add(echoTool("a.b")); err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(echoTool("a_b")); err == nil {
			t.Fatal("a_b registered although a.b already exposes a_b")
		}
	})
	t.Run("failed Add changes nothing", func(t *testing.T) {
		e := newEnv(t)
		bad := echoTool("bad")
		bad.Description = ""
		if err := e.s.Tools().Add(echoTool("good.one"), bad); err == nil {
			t.Fatal("Add with a bad tool succeeded")
		}
		if n := e.s.Tools().Len(); n != 0 {
			t.Fatalf("Len = %d after a failed Add", n)
		}
		e.fails(t, protocol.CodeInvalidParams, protocol.MethodToolsCall, `{"name":"good_one","arguments":{"text":"x"}}`)
		if got := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, "")); len(got.Tools) != 0 {
			t.Fatalf("tools/list = %+v", got.Tools)
		}
	})
}

func TestNewToolRegistrySeparator(t *testing.T) {
	for _, sep := range []string{".", "", "abcd", " ", "/", "_.", "é"} {
		if _, err := NewToolRegistry(sep); err == nil {
			t.Errorf("NewToolRegistry(%q) succeeded", sep)
		}
	}
	for _, sep := range []string{"_", "-", "__", "x", "a-Z"} {
		reg, err := NewToolRegistry(sep)
		if err != nil {
			t.Errorf("NewToolRegistry(%q): %v", sep, err)
			continue
		}
		if got, want := reg.ExposedName("memory.store"), "memory"+sep+"store"; got != want {
			t.Errorf("sep %q: ExposedName = %q, want %q", sep, got, want)
		}
	}
}

var exposedPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedNames(t *testing.T) {
	reg, _ := NewToolRegistry("_")
	for canonical, want := range map[string]string{
		"memory.store":                          "memory_store",
		"github.search_issues":                  "github_search_issues",
		"ping":                                  "ping",
		"a.b.c-d":                               "a_b_c-d",
		strings.Repeat("x", 64):                 strings.Repeat("x", 64),
		strings.Repeat("a.", 31) + "bc":         strings.Repeat("a_", 31) + "bc", // exactly 64: no hash
		strings.Repeat("ab.", 20) + "ab":        strings.Repeat("ab_", 20) + "ab",
		"Mixed-Case.With_Under-score.and-dash1": "Mixed-Case_With_Under-score_and-dash1",
	} {
		if got := reg.ExposedName(canonical); got != want {
			t.Errorf("ExposedName(%q) = %q, want %q", canonical, got, want)
		}
	}

	long := strings.Repeat("abcdefghi.", 10)[:99] + "z" // 100 characters, dotted
	if len(long) != 100 {
		t.Fatal(len(long))
	}
	exp := reg.ExposedName(long)
	if len(exp) != 64 {
		t.Fatalf("exposed name of a 100-character name has %d characters: %q", len(exp), exp)
	}
	if !regexp.MustCompile(`_[0-9a-f]{8}$`).MatchString(exp) {
		t.Errorf("exposed name %q does not end in _ and 8 hex digits", exp)
	}
	if want := strings.ReplaceAll(long, ".", "_")[:55]; !strings.HasPrefix(exp, want) {
		t.Errorf("exposed name %q does not keep the start %q", exp, want)
	}
	if !exposedPattern.MatchString(exp) {
		t.Errorf("exposed name %q does not match %s", exp, exposedPattern)
	}
	reg2, _ := NewToolRegistry("_")
	if again, other := reg.ExposedName(long), reg2.ExposedName(long); again != exp || other != exp {
		t.Errorf("exposed name not stable: %q, %q, %q", exp, again, other)
	}
	sibling := long[:90] + "zzzzzzzzzz"
	if sib := reg.ExposedName(sibling); sib == exp || len(sib) != 64 {
		t.Errorf("names sharing a 90-character prefix: %q and %q", exp, sib)
	}

	// Long names are registered, listed and callable under both names.
	e := newEnv(t, echoTool(long), echoTool(sibling))
	list := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, ""))
	want := []string{exp, reg.ExposedName(sibling)}
	slices.Sort(want) // tools/list is by exposed name
	if len(list.Tools) != 2 || list.Tools[0].Name != want[0] || list.Tools[1].Name != want[1] {
		t.Fatalf("tools/list names = %+v, want %v", list.Tools, want)
	}
	for _, name := range []string{exp, long} {
		req := &Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1), Session: e.sess, Peer: e.peer,
			Params: json.RawMessage(`{"name":"` + name + `","arguments":{"text":"hi"}}`)}
		p := e.s.Prepare(req)
		res, out, err := e.s.Run(context.Background(), req, &p)
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		if r := res.(*protocol.CallToolResult); r.IsError || r.Content[0].Text != "hi" || out.Tool != long {
			t.Fatalf("call %s = %+v tool %q", name, r, out.Tool)
		}
	}
}

// TestExposedNamesProperty: whatever the canonical name, the exposed name is
// acceptable to model APIs, is the plain join when that fits, and long names
// stay distinct.
func TestExposedNamesProperty(t *testing.T) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sep := range []string{"_", "-", "__", "abc"} {
		reg, err := NewToolRegistry(sep)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for range 3000 {
			segs := make([]string, 1+rng.IntN(8))
			for i := range segs {
				b := make([]byte, 1+rng.IntN(24))
				for j := range b {
					b[j] = alphabet[rng.IntN(len(alphabet))]
				}
				segs[i] = string(b)
			}
			canonical := strings.Join(segs, ".")
			if toolname.ValidCanonical(canonical) != nil {
				t.Fatalf("generated invalid name %q", canonical)
			}
			exp := reg.ExposedName(canonical)
			if !exposedPattern.MatchString(exp) {
				t.Fatalf("sep %q: ExposedName(%q) = %q does not match %s", sep, canonical, exp, exposedPattern)
			}
			joined := strings.Join(segs, sep)
			if len(joined) <= 64 && exp != joined {
				t.Fatalf("sep %q: ExposedName(%q) = %q, want %q", sep, canonical, exp, joined)
			}
			if prev, dup := seen[exp]; dup && prev != canonical && strings.ReplaceAll(prev, ".", sep) != joined {
				t.Fatalf("sep %q: %q and %q both expose %q", sep, prev, canonical, exp)
			}
			seen[exp] = canonical
		}
	}
}

func fiveTools() []Tool {
	var tools []Tool
	for _, n := range []string{"t.one", "t.two", "t.three", "t.four", "t.five"} {
		tools = append(tools, echoTool(n))
	}
	return tools
}

func TestToolsListPagination(t *testing.T) {
	e := newEnv(t, fiveTools()...)
	var names []string
	params := ""
	for page := 1; ; page++ {
		if page > 10 {
			t.Fatal("pagination does not end")
		}
		raw := e.ok(t, protocol.MethodToolsList, params)
		res := unmarshal[protocol.ListToolsResult](t, raw)
		m := members(t, raw)
		want := 2
		if page == 3 {
			want = 1
		}
		if len(res.Tools) != want {
			t.Fatalf("page %d has %d tools, want %d", page, len(res.Tools), want)
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if string(tool.InputSchema) != echoSchema || tool.Description == "" {
				t.Errorf("tool %+v", tool)
			}
		}
		if res.NextCursor == "" {
			if _, ok := m["nextCursor"]; ok {
				t.Errorf("last page has a nextCursor member: %s", raw)
			}
			if page != 3 {
				t.Fatalf("pagination ended after page %d", page)
			}
			break
		}
		params = `{"cursor":"` + res.NextCursor + `"}`
	}
	// By exposed name, not in registration order (docs/adr/0052-list-order-and-cursors.md).
	if got, want := strings.Join(names, ","), "t_five,t_four,t_one,t_three,t_two"; got != want {
		t.Fatalf("tools = %s, want %s", got, want)
	}

	t.Run("absent, null and empty params list the first page", func(t *testing.T) {
		for _, p := range []string{"", "{}", `{"cursor":null}`} {
			res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, p))
			if len(res.Tools) != 2 || res.Tools[0].Name != "t_five" || res.NextCursor == "" {
				t.Errorf("params %q: %+v", p, res)
			}
		}
	})
	t.Run("listed fields", func(t *testing.T) {
		ro := true
		tool := echoTool("full.tool")
		tool.Title = "Full Tool"
		tool.OutputSchema = json.RawMessage(`{"type":"object","properties":{"success":{"type":"boolean"}}}`)
		tool.Annotations = &protocol.ToolAnnotations{ReadOnlyHint: &ro}
		e := newEnv(t, tool)
		raw := e.ok(t, protocol.MethodToolsList, "")
		res := unmarshal[protocol.ListToolsResult](t, raw)
		if len(res.Tools) != 1 {
			t.Fatalf("tools = %s", raw)
		}
		got := res.Tools[0]
		if got.Name != "full_tool" || got.Title != "Full Tool" || got.Description != "echoes text" ||
			string(got.InputSchema) != echoSchema || string(got.OutputSchema) != string(tool.OutputSchema) ||
			got.Annotations == nil || got.Annotations.ReadOnlyHint == nil || !*got.Annotations.ReadOnlyHint {
			t.Fatalf("listed %s", raw)
		}
	})
	t.Run("no arguments lists the empty object schema", func(t *testing.T) {
		e := newEnv(t, simpleTool("noargs", TextResult("x"), nil))
		res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, ""))
		if len(res.Tools) != 1 || string(res.Tools[0].InputSchema) != `{"type":"object","additionalProperties":false}` {
			t.Fatalf("tools = %+v", res.Tools)
		}
	})
}

// A cursor the server did not issue is -32602 "unknown or expired
// cursor" on every list, and so is an offset cursor of an earlier
// version (docs/adr/0052-list-order-and-cursors.md).
func TestBadCursors(t *testing.T) {
	e := newEnv(t, fiveTools()...)
	if err := e.s.AddResource(Resource{Resource: protocol.Resource{URI: "test://r", Name: "r"}, Read: func(context.Context, Session) ([]protocol.ResourceContents, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	b64 := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	methods := map[string]listKind{
		protocol.MethodToolsList:              kindTools,
		protocol.MethodResourcesList:          kindResources,
		protocol.MethodResourcesTemplatesList: kindTemplates,
		protocol.MethodPromptsList:            kindPrompts,
	}
	for _, tc := range []struct {
		name   string
		cursor func(kind listKind) string
		legacy bool // the message says to list again
	}{
		{"garbage", func(listKind) string { return "garbage" }, false},
		{"not base64", func(listKind) string { return "!!!not*base64!!!" }, false},
		{"empty", func(listKind) string { return "" }, false},
		{"padded base64", func(k listKind) string {
			return base64.URLEncoding.EncodeToString([]byte("k1" + string(k) + ":0:t_on"))
		}, false},
		{"valid cursor with pad", func(k listKind) string { return encodeCursor(k, listKey{name: "t_one"}) + "=" }, false},
		{"valid cursor with a line break", func(k listKind) string {
			c := encodeCursor(k, listKey{name: "t_one"})
			return c[:4] + "\r\n" + c[4:]
		}, false},
		{"wrong version", func(k listKind) string { return b64("k2" + string(k) + ":0:t_one") }, false},
		{"another list's cursor", func(k listKind) string {
			other := kindTools
			if k == kindTools {
				other = kindPrompts
			}
			return encodeCursor(other, listKey{name: "t_one"})
		}, false},
		{"no group length", func(k listKind) string { return b64("k1" + string(k) + ":t_one") }, false},
		{"group length not a number", func(k listKind) string { return b64("k1" + string(k) + ":x:t_one") }, false},
		{"negative group length", func(k listKind) string { return b64("k1" + string(k) + ":-1:t_one") }, false},
		{"group length with a leading zero", func(k listKind) string { return b64("k1" + string(k) + ":00:t_one") }, false},
		{"group longer than the cursor", func(k listKind) string { return b64("k1" + string(k) + ":6:t_one") }, false},
		{"huge group length", func(k listKind) string { return b64("k1" + string(k) + ":99999999999999999999999:t_one") }, false},
		{"offset of an earlier version", func(listKind) string { return b64("o1:2") }, true},
		{"offset past the end of an earlier version", func(listKind) string { return b64("o1:6") }, true},
		{"garbage offset of an earlier version", func(listKind) string { return b64("o1:two") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for method, kind := range methods {
				c, _ := json.Marshal(tc.cursor(kind))
				perr := e.fails(t, protocol.CodeInvalidParams, method, `{"cursor":`+string(c)+`}`)
				if !strings.Contains(perr.Message, "unknown or expired cursor") {
					t.Errorf("%s: message %q", method, perr.Message)
				}
				if got := strings.Contains(perr.Message, "list again"); got != tc.legacy {
					t.Errorf("%s: message %q, want it to say to list again: %v", method, perr.Message, tc.legacy)
				}
			}
		})
	}
	t.Run("cursor of the wrong type", func(t *testing.T) {
		perr := e.fails(t, protocol.CodeInvalidParams, protocol.MethodToolsList, `{"cursor":5}`)
		if !strings.Contains(perr.Message, "cursor") {
			t.Errorf("message %q does not name the field", perr.Message)
		}
	})
	t.Run("a cursor after the last tool lists nothing", func(t *testing.T) {
		for _, name := range []string{"t_two", "t_zzz"} {
			res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, `{"cursor":"`+encodeCursor(kindTools, listKey{name: name})+`"}`))
			if len(res.Tools) != 0 || res.NextCursor != "" {
				t.Errorf("after %s: %+v", name, res)
			}
		}
	})
}

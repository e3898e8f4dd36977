package protocol_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func TestAppendModernResult(t *testing.T) {
	info := protocol.ServerInfoJSON(protocol.Implementation{Name: "mcp-runtime", Version: "1.0.0"})
	hint := &protocol.CacheHint{TTL: 1500 * time.Millisecond, Public: true}
	tests := []struct {
		name, result string
		hint         *protocol.CacheHint
		want         string
	}{
		{"a list", `{"tools":[{"name":"a"}],"nextCursor":"c"}`, hint,
			`{"resultType":"complete","ttlMs":1500,"cacheScope":"public","tools":[{"name":"a"}],"nextCursor":"c","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-runtime","version":"1.0.0"}}}`},
		{"a tool result keeps its _meta", ` { "content" : [ ] , "_meta" : { "io.mcp-runtime/call" : { "ms" : 1 } } } `, nil,
			`{"resultType":"complete","content":[ ],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-runtime","version":"1.0.0"},"io.mcp-runtime/call":{ "ms" : 1 }}}`},
		{"members of those names are replaced", `{"resultType":"x","ttlMs":-1,"cacheScope":"?","_meta":{"io.modelcontextprotocol/serverInfo":"old"}}`, &protocol.CacheHint{},
			`{"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-runtime","version":"1.0.0"}}}`},
		{"other spellings of those names are replaced too", `{"ResultType":"input_required","CacheScope":"public","TTLMS":9,"content":[]}`, nil,
			`{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-runtime","version":"1.0.0"}}}`},
		{"other spellings of serverInfo in _meta are replaced too", `{"content":[],"_meta":{"IO.ModelContextProtocol/ServerInfo":{"name":"upstream"},"x":1}}`, nil,
			`{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-runtime","version":"1.0.0"},"x":1}}`},
		{"empty", `{}`, nil, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-runtime","version":"1.0.0"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := protocol.AppendModernResult(nil, []byte(tt.result), protocol.ResultComplete, tt.hint, info)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Fatal("not valid JSON")
			}
		})
	}
	for _, bad := range []string{`[]`, ` `, ``, "\n"} {
		if _, err := protocol.AppendModernResult(nil, []byte(bad), protocol.ResultComplete, nil, info); err == nil {
			t.Fatalf("%q was taken for a result", bad)
		}
	}
}

// FuzzAppendModernResult: any object in, valid JSON out, with the
// members the era requires.
func FuzzAppendModernResult(f *testing.F) {
	f.Add(`{"a":1,"_meta":{"b":2}}`, int64(5))
	f.Add(`{}`, int64(-3))
	f.Fuzz(func(t *testing.T, result string, ttl int64) {
		if !json.Valid([]byte(result)) {
			return
		}
		got, err := protocol.AppendModernResult(nil, []byte(result), protocol.ResultComplete, &protocol.CacheHint{TTL: time.Duration(ttl)}, []byte(`{"name":"n","version":"v"}`))
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("%q gave invalid JSON %q", result, got)
		}
		// Member names are exact in MCP; encoding/json would also take
		// other spellings of them.
		var v [4]json.RawMessage
		if err := protocol.LookupMembers(got, []string{"resultType", "ttlMs", "cacheScope", "_meta"}, v[:]); err != nil {
			t.Fatal(err)
		}
		if string(v[0]) != `"complete"` || len(v[1]) == 0 || v[1][0] == '-' || string(v[2]) != `"private"` || len(v[3]) == 0 || v[3][0] != '{' {
			t.Fatalf("%q gave %s", result, got)
		}
	})
}

// The tools/call fast path writes what the general one does: the same
// JSON, member for member, for results of every shape a tool returns.
func TestAppendModernToolResponse(t *testing.T) {
	info := protocol.ServerInfoJSON(protocol.Implementation{Name: "s", Version: "1"})
	cases := map[string]*protocol.CallToolResult{
		"text":       {Content: []protocol.Content{protocol.TextContent("hi")}},
		"empty":      {},
		"structured": {Content: []protocol.Content{protocol.TextContent("x")}, StructuredContent: json.RawMessage(`{"a":[1,2]}`)},
		"error":      {Content: []protocol.Content{protocol.TextContent("failed")}, IsError: true},
		"raw blocks": {RawContent: []json.RawMessage{json.RawMessage(`{"type":"text","text":"up","x":1}`)}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := protocol.AppendModernToolResponse(nil, protocol.ID("7"), r, info)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := protocol.AppendToolResult(nil, r)
			if err != nil {
				t.Fatal(err)
			}
			res, err := protocol.AppendModernResult(nil, plain, protocol.ResultComplete, nil, info)
			if err != nil {
				t.Fatal(err)
			}
			want := protocol.AppendResult(nil, protocol.ID("7"), res)
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("invalid JSON %s: %v", got, err)
			}
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("fast path\n%s\nwant\n%s", got, want)
			}
		})
	}
	if _, err := protocol.AppendModernToolResponse(nil, protocol.ID("7"), &protocol.CallToolResult{Meta: json.RawMessage(`{"k":1}`)}, info); err == nil {
		t.Fatal("a result with _meta of its own took the fast path")
	}
}

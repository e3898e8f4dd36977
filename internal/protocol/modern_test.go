package protocol_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func modernHeader(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

const okMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}}}`

// CheckModern answers as the conformance suite's server-stateless
// scenario expects, in its order: _meta first, then the headers, then the
// version.
func TestCheckModern(t *testing.T) {
	std := []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo"}
	tests := []struct {
		name   string
		body   string
		header []string
		code   int    // 0: accepted
		data   string // the error's data, when it has one
	}{
		{"accepted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + okMeta + `}}`, std, 0, ""},
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, std, protocol.CodeInvalidParams, ""},
		{"no capabilities", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, std, protocol.CodeInvalidParams, ""},
		{"version not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}}`, std, protocol.CodeInvalidParams, ""},
		{"bad log level", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}}`, std, protocol.CodeInvalidParams, ""},
		{"version header missing", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + okMeta + `}}`, std[2:], protocol.CodeHeaderMismatch, ""},
		{"version header differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + okMeta + `}}`, append([]string{"Mcp-Protocol-Version", "2025-11-25"}, std[2:]...), protocol.CodeHeaderMismatch, ""},
		{"method header differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + okMeta + `}}`, []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list", "Mcp-Name", "echo"}, protocol.CodeHeaderMismatch, ""},
		{"name header missing", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + okMeta + `}}`, std[:4], protocol.CodeHeaderMismatch, ""},
		{"name header differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + okMeta + `}}`, append(std[:4:4], "Mcp-Name", "rm"), protocol.CodeHeaderMismatch, ""},
		{"name header in Base64", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"héllo wörld",` + okMeta + `}}`, []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "prompts/get", "Mcp-Name", "=?base64?aMOpbGxvIHfDtnJsZA==?="}, 0, ""},
		{"resource uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a b",` + okMeta + `}}`, []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "file:///a b"}, 0, ""},
		{"no name header needed for lists", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + okMeta + `}}`, []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"}, 0, ""},
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			[]string{"Mcp-Protocol-Version", "v999.0.0", "Mcp-Method", "tools/list"}, protocol.CodeUnsupportedProtocolVersion, `{"supported":["2026-07-28"],"requested":"v999.0.0"}`},
		{"a legacy version is not a modern one", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			[]string{"Mcp-Protocol-Version", "2025-11-25", "Mcp-Method", "tools/list"}, protocol.CodeUnsupportedProtocolVersion, `{"supported":["2026-07-28"],"requested":"2025-11-25"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, _, derr := protocol.Decode([]byte(tt.body))
			if derr != nil {
				t.Fatalf("decode: %v", derr)
			}
			if !protocol.ScanModern(msg.Method, msg.Params).Modern() && tt.code == 0 {
				t.Fatal("not classified as modern")
			}
			meta, err := protocol.CheckModern(msg, protocol.ScanModern(msg.Method, msg.Params), modernHeader(tt.header...))
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err.Error)
				}
				if meta.ProtocolVersion != protocol.Version20260728 {
					t.Fatalf("meta = %+v", meta)
				}
				return
			}
			if err == nil || err.Code != tt.code || err.Status != http.StatusBadRequest {
				t.Fatalf("err = %+v, want 400 with code %d", err, tt.code)
			}
			if tt.data != "" && string(err.Data) != tt.data {
				t.Fatalf("data = %s, want %s", err.Data, tt.data)
			}
		})
	}
}

func TestModernMeta(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":true},"io.modelcontextprotocol/logLevel":"warning","progressToken":"p1"}}}`
	msg, _, _ := protocol.Decode([]byte(body))
	meta, err := protocol.CheckModern(msg, protocol.ScanModern(msg.Method, msg.Params), modernHeader("Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"))
	if err != nil {
		t.Fatal(err.Error)
	}
	if !meta.HasCapability("sampling") || meta.HasCapability("elicitation") || meta.HasCapability("roots") {
		t.Errorf("capabilities read wrong from %s", meta.ClientCapabilities)
	}
	if meta.LogLevel != protocol.LevelWarning || string(meta.ProgressToken) != `"p1"` || meta.ClientInfo != nil {
		t.Errorf("meta = %+v", meta)
	}
}

func TestScanModernIsModern(t *testing.T) {
	for params, want := range map[string]bool{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`: true,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`:         true,
		`{"protocolVersion":"2025-11-25","capabilities":{}}`:                 false,
		`{"_meta":{"progressToken":1}}`:                                      false,
		`{"_meta":"io.modelcontextprotocol/protocolVersion"}`:                false,
		``: false,
	} {
		if got := protocol.ScanModern("", json.RawMessage(params)).Modern(); got != want {
			t.Errorf("ScanModern(%s).Modern() = %v, want %v", params, got, want)
		}
	}
}

// The specification's encoding examples (basic/transports/streamable-http,
// "Value Encoding"), read back.
func TestDecodeHeaderValue(t *testing.T) {
	tests := []struct{ header, want, wantErr string }{
		{"us-west1", "us-west1", ""},
		{"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", ""},
		{"=?base64?IHBhZGRlZCA=?=", " padded ", ""},
		{"=?base64?bGluZTEKbGluZTI=?=", "line1\nline2", ""},
		{"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?=", ""},
		{"=?base64?not base64!?=", "", "not valid Base64"},
		{"=?base64?/w==?=", "", "UTF-8"},
		{"caf\xc3\xa9", "", "send it Base64-encoded"},
		{"a\x01b", "", "send it Base64-encoded"},
	}
	for _, tt := range tests {
		got, err := protocol.DecodeHeaderValue(tt.header)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DecodeHeaderValue(%q) = %q, %v; want an error containing %q", tt.header, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", tt.header, got, err, tt.want)
		}
	}
}

func TestMissingCapability(t *testing.T) {
	e := protocol.MissingCapability("sampling")
	if e.Status != http.StatusBadRequest || e.Code != protocol.CodeMissingClientCapability || string(e.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
		t.Fatalf("MissingCapability = %d %d %s", e.Status, e.Code, e.Data)
	}
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"} {
		if !protocol.RemovedInModern(m) {
			t.Errorf("%s is not removed", m)
		}
	}
	if protocol.RemovedInModern("tools/call") || protocol.RemovedInModern("server/discover") {
		t.Error("a modern method is removed")
	}
}

// The headers cannot say one thing while the body runs another: no second
// value of a header, no second spelling of the member it mirrors, no
// empty name standing for a missing one.
func TestCheckModernMismatchAttacks(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	tests := []struct {
		name, body string
		header     [][2]string
		code       int
	}{
		{"a prompt name in another case", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"public","Name":"secret",` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "prompts/get"}, {"Mcp-Name", "public"}}, protocol.CodeInvalidParams},
		{"a resource URI in another case", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///public","URI":"file:///etc/secret",` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "resources/read"}, {"Mcp-Name", "file:///public"}}, protocol.CodeInvalidParams},
		{"two Mcp-Name values", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret",` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", "secret"}, {"Mcp-Name", "public"}}, protocol.CodeHeaderMismatch},
		{"two Mcp-Method values", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a",` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Method", "tools/list"}, {"Mcp-Name", "a"}}, protocol.CodeHeaderMismatch},
		{"two version values", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Protocol-Version", "2025-11-25"}, {"Mcp-Method", "tools/list"}}, protocol.CodeHeaderMismatch},
		{"an empty Base64 name for a missing one", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", "=?base64??="}}, protocol.CodeInvalidParams},
		{"a name that is not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,` + meta + `}}`,
			[][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", "7"}}, protocol.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, _, derr := protocol.Decode([]byte(tt.body))
			if derr != nil {
				t.Fatal(derr)
			}
			h := http.Header{}
			for _, kv := range tt.header {
				h.Add(kv[0], kv[1])
			}
			_, err := protocol.CheckModern(msg, protocol.ScanModern(msg.Method, msg.Params), h)
			if err == nil || err.Code != tt.code || err.Status != http.StatusBadRequest {
				t.Fatalf("err = %+v, want 400 with code %d", err, tt.code)
			}
		})
	}
}

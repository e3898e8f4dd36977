package protocol_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// FuzzDecode: Decode never panics; what it accepts is a well-formed
// message, and what it rejects is answered by an error response that is
// itself a well-formed message (docs/adr/0005-error-layers-and-envelope.md:
// a malformed input is answered, and the server keeps serving).
func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.input))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1e400,"method":"x"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"\ud800","method":"x"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[[[[{}]]]]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, id, perr := protocol.Decode(data)
		if perr == nil {
			if msg == nil {
				t.Fatal("no message and no error")
			}
			switch msg.Kind {
			case protocol.KindRequest:
				if msg.Method == "" || id.IsZero() {
					t.Fatalf("request with method %q id %q", msg.Method, id)
				}
			case protocol.KindNotification:
				if msg.Method == "" || !id.IsZero() {
					t.Fatalf("notification with method %q id %q", msg.Method, id)
				}
			case protocol.KindResponse:
				if msg.Method != "" || (msg.Result == nil) == (msg.Error == nil) {
					t.Fatalf("response %+v", msg)
				}
			default:
				t.Fatalf("kind %d", msg.Kind)
			}
			if len(msg.Params) > 0 && msg.Params[0] != '{' {
				t.Fatalf("params %q", msg.Params)
			}
			return
		}
		if msg != nil {
			t.Fatal("message and error both returned")
		}
		switch perr.Code {
		case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeInvalidParams:
		default:
			t.Fatalf("code %d", perr.Code)
		}
		if perr.Message == "" {
			t.Fatal("empty error message")
		}
		out := protocol.AppendError(nil, id, perr)
		if !json.Valid(out) {
			t.Fatalf("error response is not valid JSON: %q", out)
		}
		back, backID, berr := protocol.Decode(out)
		if berr != nil {
			t.Fatalf("error response %s does not decode: %v", out, berr)
		}
		if back.Kind != protocol.KindResponse || back.Error == nil ||
			back.Error.Code != perr.Code || back.Error.Message != perr.Message || string(backID) != string(id) {
			t.Fatalf("error response %s decodes as %+v id %q", out, back, backID)
		}
	})
}

// FuzzCheckModern: whatever a modern request and its headers hold, the
// check answers with an accepted request or a 400 error, and never
// panics; an accepted one names a modern version, and its Mcp-Name is
// the name or URI a handler decodes from its params with encoding/json
// (what an intermediary routes on is what runs).
func FuzzCheckModern(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "2026-07-28", "tools/call", "a")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","_meta":{}}}`, "", "resources/read", "=?base64?eA==?=")
	// A repeated name (the last one runs), and one in another case.
	for _, name := range []string{"a", "b"} {
		f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"b"}}`, "2026-07-28", "tools/call", name)
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"a","Name":"b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, "2026-07-28", "prompts/get", "a")
	f.Fuzz(func(t *testing.T, body, version, method, name string) {
		msg, _, derr := protocol.Decode([]byte(body))
		if derr != nil || msg.Kind != protocol.KindRequest {
			return
		}
		h := http.Header{}
		h.Set(protocol.HeaderProtocolVersion, version)
		h.Set(protocol.HeaderMethod, method)
		h.Set(protocol.HeaderName, name)
		meta, err := protocol.CheckModern(msg, protocol.ScanModern(msg.Method, msg.Params), h)
		if err != nil {
			if err.Status != http.StatusBadRequest || err.Error == nil {
				t.Fatalf("error %+v", err)
			}
			return
		}
		if !protocol.IsModernVersion(meta.ProtocolVersion) {
			t.Fatalf("accepted version %q", meta.ProtocolVersion)
		}
		switch msg.Method {
		case protocol.MethodToolsCall, protocol.MethodPromptsGet, protocol.MethodResourcesRead:
		default:
			return
		}
		var ref struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		}
		if err := json.Unmarshal(msg.Params, &ref); err != nil {
			t.Fatalf("accepted params %s do not decode: %v", msg.Params, err)
		}
		want := ref.Name
		if msg.Method == protocol.MethodResourcesRead {
			want = ref.URI
		}
		if got, err := protocol.DecodeHeaderValue(name); err != nil || got != want {
			t.Fatalf("accepted %s with Mcp-Name %q; params %s decode to %q", msg.Method, name, msg.Params, want)
		}
	})
}

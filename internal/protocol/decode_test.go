package protocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// decodeCase is one Decode input and what must come out of it. A case with
// wantCode 0 must decode; otherwise Decode must fail with wantCode and return
// wantID as the id to answer with ("" meaning the zero ID, sent as null).
type decodeCase struct {
	name  string
	input string

	wantCode int
	wantID   string

	// Success expectations.
	wantKind   protocol.Kind
	wantMethod string
	wantParams string // raw params; "" means none
	wantResult string // raw result; "" means none
	wantErr    int    // code of a decoded error response; 0 means none
}

// decodeCases is shared with FuzzDecode as its seed corpus.
var decodeCases = []decodeCase{
	// Valid messages.
	{name: "request", input: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"abc"}}`,
		wantID: `1`, wantKind: protocol.KindRequest, wantMethod: "tools/list", wantParams: `{"cursor":"abc"}`},
	{name: "request string id", input: `{"jsonrpc":"2.0","id":"req-1","method":"ping"}`,
		wantID: `"req-1"`, wantKind: protocol.KindRequest, wantMethod: "ping"},
	{name: "request id spelled as sent", input: `{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}`,
		wantID: `12345678901234567890`, wantKind: protocol.KindRequest, wantMethod: "ping"},
	{name: "request negative id", input: `{"jsonrpc":"2.0","id":-3,"method":"ping"}`,
		wantID: `-3`, wantKind: protocol.KindRequest, wantMethod: "ping"},
	{name: "request null params", input: `{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`,
		wantID: `2`, wantKind: protocol.KindRequest, wantMethod: "ping"},
	{name: "request surrounding whitespace", input: " \r\n\t{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\n",
		wantID: `4`, wantKind: protocol.KindRequest, wantMethod: "ping"},
	{name: "request member order", input: `{"params":{},"method":"tools/call","id":"z","jsonrpc":"2.0"}`,
		wantID: `"z"`, wantKind: protocol.KindRequest, wantMethod: "tools/call", wantParams: `{}`},
	{name: "notification", input: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		wantKind: protocol.KindNotification, wantMethod: "notifications/initialized"},
	{name: "notification with params", input: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		wantKind: protocol.KindNotification, wantMethod: "notifications/cancelled", wantParams: `{"requestId":3}`},
	{name: "response result", input: `{"jsonrpc":"2.0","id":5,"result":{"roots":[]}}`,
		wantID: `5`, wantKind: protocol.KindResponse, wantResult: `{"roots":[]}`},
	{name: "response empty result", input: `{"jsonrpc":"2.0","id":"s1","result":{}}`,
		wantID: `"s1"`, wantKind: protocol.KindResponse, wantResult: `{}`},
	{name: "response error", input: `{"jsonrpc":"2.0","id":"s2","error":{"code":-32601,"message":"no such method"}}`,
		wantID: `"s2"`, wantKind: protocol.KindResponse, wantErr: -32601},
	{name: "response error null id", input: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		wantKind: protocol.KindResponse, wantErr: -32700},

	// Parse errors: nothing is readable, so the id is always null.
	{name: "empty body", input: ``, wantCode: protocol.CodeParseError},
	{name: "whitespace only", input: " \t\r\n ", wantCode: protocol.CodeParseError},
	{name: "invalid JSON", input: `{jsonrpc: 2.0}`, wantCode: protocol.CodeParseError},
	{name: "invalid JSON trailing garbage", input: `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, wantCode: protocol.CodeParseError},
	{name: "two objects", input: `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, wantCode: protocol.CodeParseError},
	{name: "truncated JSON", input: `{"jsonrpc":"2.0","id":1,"method":"tools/li`, wantCode: protocol.CodeParseError},
	{name: "truncated after brace", input: `{`, wantCode: protocol.CodeParseError},
	{name: "invalid UTF-8 in string", input: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\xfeing\"}", wantCode: protocol.CodeParseError},
	{name: "invalid UTF-8 in params", input: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":\"\xff\"}}", wantCode: protocol.CodeParseError},

	// Not a single object.
	{name: "batch", input: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, wantCode: protocol.CodeInvalidRequest},
	{name: "empty batch", input: `[]`, wantCode: protocol.CodeInvalidRequest},
	{name: "batch after whitespace", input: "\n [{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", wantCode: protocol.CodeInvalidRequest},
	{name: "top-level string", input: `"ping"`, wantCode: protocol.CodeInvalidRequest},
	{name: "top-level number", input: `42`, wantCode: protocol.CodeInvalidRequest},
	{name: "top-level null", input: `null`, wantCode: protocol.CodeInvalidRequest},
	{name: "top-level true", input: `true`, wantCode: protocol.CodeInvalidRequest},

	// Envelope errors with a readable id: the id is echoed as sent.
	{name: "jsonrpc missing", input: `{"id":1,"method":"ping"}`, wantCode: protocol.CodeInvalidRequest, wantID: `1`},
	{name: "jsonrpc 1.0", input: `{"jsonrpc":"1.0","id":"a","method":"ping"}`, wantCode: protocol.CodeInvalidRequest, wantID: `"a"`},
	{name: "jsonrpc number", input: `{"jsonrpc":2.0,"id":7,"method":"ping"}`, wantCode: protocol.CodeInvalidRequest, wantID: `7`},
	{name: "jsonrpc null", input: `{"jsonrpc":null,"id":7,"method":"ping"}`, wantCode: protocol.CodeInvalidRequest, wantID: `7`},
	{name: "jsonrpc escaped", input: `{"jsonrpc":"2\u002e0","id":7,"method":"ping"}`, wantCode: protocol.CodeInvalidRequest, wantID: `7`},
	{name: "method number", input: `{"jsonrpc":"2.0","id":9,"method":5}`, wantCode: protocol.CodeInvalidRequest, wantID: `9`},
	{name: "method null", input: `{"jsonrpc":"2.0","id":9,"method":null}`, wantCode: protocol.CodeInvalidRequest, wantID: `9`},
	{name: "method empty", input: `{"jsonrpc":"2.0","id":"m","method":""}`, wantCode: protocol.CodeInvalidRequest, wantID: `"m"`},
	{name: "params string", input: `{"jsonrpc":"2.0","id":10,"method":"ping","params":"x"}`, wantCode: protocol.CodeInvalidRequest, wantID: `10`},
	{name: "params number", input: `{"jsonrpc":"2.0","id":11,"method":"ping","params":3}`, wantCode: protocol.CodeInvalidRequest, wantID: `11`},
	{name: "params bool", input: `{"jsonrpc":"2.0","id":11,"method":"ping","params":false}`, wantCode: protocol.CodeInvalidRequest, wantID: `11`},
	{name: "params array", input: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":["echo"]}`, wantCode: protocol.CodeInvalidParams, wantID: `12`},
	{name: "request carrying result", input: `{"jsonrpc":"2.0","id":13,"method":"ping","result":{}}`, wantCode: protocol.CodeInvalidRequest, wantID: `13`},
	{name: "request carrying error", input: `{"jsonrpc":"2.0","id":13,"method":"ping","error":{"code":1,"message":"x"}}`, wantCode: protocol.CodeInvalidRequest, wantID: `13`},
	{name: "response with result and error", input: `{"jsonrpc":"2.0","id":14,"result":{},"error":{"code":-1,"message":"x"}}`, wantCode: protocol.CodeInvalidRequest, wantID: `14`},
	{name: "response with neither", input: `{"jsonrpc":"2.0","id":15}`, wantCode: protocol.CodeInvalidRequest, wantID: `15`},
	{name: "response error not an object", input: `{"jsonrpc":"2.0","id":16,"error":"boom"}`, wantCode: protocol.CodeInvalidRequest, wantID: `16`},
	{name: "response error empty object", input: `{"jsonrpc":"2.0","id":16,"error":{}}`, wantCode: protocol.CodeInvalidRequest, wantID: `16`},
	{name: "response without id", input: `{"jsonrpc":"2.0","result":{}}`, wantCode: protocol.CodeInvalidRequest},
	{name: "empty object", input: `{}`, wantCode: protocol.CodeInvalidRequest},

	// Unusable ids: the error goes out with a null id.
	{name: "id object", input: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, wantCode: protocol.CodeInvalidRequest},
	{name: "id array", input: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, wantCode: protocol.CodeInvalidRequest},
	{name: "id bool", input: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, wantCode: protocol.CodeInvalidRequest},
	{name: "id false on response", input: `{"jsonrpc":"2.0","id":false,"result":{}}`, wantCode: protocol.CodeInvalidRequest},
	{name: "id null on request", input: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, wantCode: protocol.CodeInvalidRequest},
	{name: "id object with bad jsonrpc", input: `{"jsonrpc":"1.0","id":{},"method":"ping"}`, wantCode: protocol.CodeInvalidRequest},

	// Unusual but valid unicode.
	{name: "emoji method", input: `{"jsonrpc":"2.0","id":20,"method":"tools/😀","params":{"t":"🦀🇺🇳"}}`,
		wantID: `20`, wantKind: protocol.KindRequest, wantMethod: "tools/😀", wantParams: `{"t":"🦀🇺🇳"}`},
	{name: "RTL marks", input: "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"x\u200f\u202eabc\",\"params\":{\"\u200fk\":\"\u05e9\u05dc\u05d5\u05dd\u202c\"}}",
		wantID: `21`, wantKind: protocol.KindRequest, wantMethod: "x\u200f\u202eabc", wantParams: "{\"\u200fk\":\"\u05e9\u05dc\u05d5\u05dd\u202c\"}"},
	{name: "raw line and paragraph separators", input: "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"a\u2028b\u2029c\",\"params\":{\"s\":\"\u2028\u2029\"}}",
		wantID: `22`, wantKind: protocol.KindRequest, wantMethod: "a\u2028b\u2029c", wantParams: "{\"s\":\"\u2028\u2029\"}"},
	{name: "escaped surrogate pair", input: `{"jsonrpc":"2.0","id":23,"method":"m\ud83d\ude00","params":{"s":"\ud83d\ude00\u0000\n"}}`,
		wantID: `23`, wantKind: protocol.KindRequest, wantMethod: "m😀", wantParams: `{"s":"\ud83d\ude00\u0000\n"}`},
	{name: "escaped id string", input: `{"jsonrpc":"2.0","id":"\u00e9\"x","method":"ping"}`,
		wantID: `"\u00e9\"x"`, wantKind: protocol.KindRequest, wantMethod: "ping"},
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			checkDecode(t, tc)
		})
	}
}

func checkDecode(t *testing.T, tc decodeCase) {
	t.Helper()
	msg, id, perr := protocol.Decode([]byte(tc.input))
	if string(id) != tc.wantID {
		t.Errorf("id = %q, want %q", id, tc.wantID)
	}
	if tc.wantCode != 0 {
		if perr == nil {
			t.Fatalf("Decode succeeded with %+v, want error %d", msg, tc.wantCode)
		}
		if msg != nil {
			t.Errorf("Decode returned both a message and an error")
		}
		if perr.Code != tc.wantCode {
			t.Errorf("code = %d (%q), want %d", perr.Code, perr.Message, tc.wantCode)
		}
		if strings.TrimSpace(perr.Message) == "" {
			t.Errorf("error message is empty")
		}
		return
	}
	if perr != nil {
		t.Fatalf("Decode failed: %v", perr)
	}
	if msg.Kind != tc.wantKind {
		t.Errorf("kind = %d, want %d", msg.Kind, tc.wantKind)
	}
	if string(msg.ID) != tc.wantID {
		t.Errorf("msg.ID = %q, want %q", msg.ID, tc.wantID)
	}
	if msg.Method != tc.wantMethod {
		t.Errorf("method = %q, want %q", msg.Method, tc.wantMethod)
	}
	if string(msg.Params) != tc.wantParams {
		t.Errorf("params = %q, want %q", msg.Params, tc.wantParams)
	}
	if string(msg.Result) != tc.wantResult {
		t.Errorf("result = %q, want %q", msg.Result, tc.wantResult)
	}
	switch {
	case tc.wantErr == 0 && msg.Error != nil:
		t.Errorf("unexpected decoded error %+v", msg.Error)
	case tc.wantErr != 0 && msg.Error == nil:
		t.Errorf("decoded error missing, want code %d", tc.wantErr)
	case tc.wantErr != 0 && msg.Error.Code != tc.wantErr:
		t.Errorf("decoded error code = %d, want %d", msg.Error.Code, tc.wantErr)
	}
}

// TestDecodeMemberNamesAreCaseSensitive: JSON object member names are case
// sensitive, so {"JSONRPC":"2.0",...} lacks "jsonrpc" and is not a request.
func TestDecodeMemberNamesAreCaseSensitive(t *testing.T) {
	for _, tc := range []decodeCase{
		{name: "uppercase envelope", input: `{"JSONRPC":"2.0","ID":1,"METHOD":"ping"}`, wantCode: protocol.CodeInvalidRequest},
		{name: "capitalised method", input: `{"jsonrpc":"2.0","id":1,"Method":"ping"}`, wantCode: protocol.CodeInvalidRequest, wantID: `1`},
		{name: "capitalised result is an unknown member", input: `{"jsonrpc":"2.0","id":1,"method":"ping","Result":{}}`,
			wantID: `1`, wantKind: protocol.KindRequest, wantMethod: "ping"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkDecode(t, tc) })
	}
}

func TestDecodeHugeStringParam(t *testing.T) {
	big := strings.Repeat("abcdefgh", 1<<17) // 1 MiB
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + big + `"}}}`
	msg, id, perr := protocol.Decode([]byte(in))
	if perr != nil {
		t.Fatalf("Decode: %v", perr)
	}
	if msg.Kind != protocol.KindRequest || string(id) != "1" {
		t.Fatalf("kind %d id %q", msg.Kind, id)
	}
	var p struct {
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.Arguments.Text != big {
		t.Fatalf("text param has %d bytes, want %d", len(p.Arguments.Text), len(big))
	}
}

// TestDecodeDeepNesting: nesting must neither panic nor hang. Within the
// JSON decoder's depth limit the message decodes; beyond it Decode returns a
// well-formed error.
func TestDecodeDeepNesting(t *testing.T) {
	for _, depth := range []int{100, 5000, 9990, 10000, 100000} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			in := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":` +
				strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`
			type out struct {
				msg   *protocol.Message
				id    protocol.ID
				perr  *protocol.Error
				panic any
			}
			done := make(chan out, 1)
			go func() {
				var o out
				defer func() { o.panic = recover(); done <- o }()
				o.msg, o.id, o.perr = protocol.Decode([]byte(in))
			}()
			var o out
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Decode did not return within 20s")
			}
			if o.panic != nil {
				t.Fatalf("Decode panicked: %v", o.panic)
			}
			if o.perr == nil {
				if o.msg == nil || o.msg.Kind != protocol.KindRequest || string(o.id) != "1" {
					t.Fatalf("success without a request: %+v id %q", o.msg, o.id)
				}
				if depth > 10000 {
					t.Fatalf("depth %d beyond the JSON decoder's limit decoded", depth)
				}
				return
			}
			switch o.perr.Code {
			case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeInvalidParams:
			default:
				t.Fatalf("code %d", o.perr.Code)
			}
			if o.perr.Message == "" {
				t.Fatal("empty message")
			}
			if !o.id.IsZero() && string(o.id) != "1" {
				t.Fatalf("id %q", o.id)
			}
			if depth < 9000 {
				t.Fatalf("depth %d is within the limit but failed: %v", depth, o.perr)
			}
		})
	}
}

func TestIDHelpers(t *testing.T) {
	if got := protocol.IntID(42); string(got) != "42" || got.IsZero() {
		t.Errorf("IntID(42) = %q", got)
	}
	if got := protocol.IntID(-7).String(); got != "-7" {
		t.Errorf("IntID(-7).String() = %q", got)
	}
	var zero protocol.ID
	if !zero.IsZero() || zero.String() != "null" {
		t.Errorf("zero ID: IsZero %v String %q", zero.IsZero(), zero.String())
	}
	b, err := json.Marshal(struct {
		A protocol.ID `json:"a"`
		B protocol.ID `json:"b"`
		C protocol.ID `json:"c"`
	}{nil, protocol.ID(`"1"`), protocol.ID(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":null,"b":"1","c":1}`; !bytes.Equal(b, []byte(want)) {
		t.Errorf("marshal = %s, want %s", b, want)
	}
}

// ID.UnmarshalJSON keeps a copy of the id it reads. Decoded messages alias
// the request body (Message.ID, Params), so an id written into storage it
// already had would overwrite the body, or an id kept from before.
func TestIDUnmarshalNeverWritesIntoOldStorage(t *testing.T) {
	t.Run("into a decoded message's id", func(t *testing.T) {
		body := []byte(`{"jsonrpc":"2.0","id":"abcdef","method":"notifications/x","params":{"requestId":7,"reason":"r"}}`)
		orig := string(body)
		msg, _, perr := protocol.Decode(body)
		if perr != nil {
			t.Fatal(perr)
		}
		// A params struct that starts from the message's id (reused, or
		// prefilled) and is then filled from the params.
		p := protocol.CancelledParams{RequestID: msg.ID}
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			t.Fatal(err)
		}
		if string(p.RequestID) != "7" {
			t.Errorf("requestId = %s, want 7", p.RequestID)
		}
		if string(body) != orig {
			t.Errorf("decoding params changed the request body:\n got %s\nwant %s", body, orig)
		}
		if string(msg.ID) != `"abcdef"` {
			t.Errorf("message id = %s, want \"abcdef\"", msg.ID)
		}
	})
	t.Run("into a struct decoded before", func(t *testing.T) {
		var p protocol.CancelledParams
		if err := json.Unmarshal([]byte(`{"requestId":123456789}`), &p); err != nil {
			t.Fatal(err)
		}
		kept := p.RequestID
		if err := json.Unmarshal([]byte(`{"requestId":"ab"}`), &p); err != nil {
			t.Fatal(err)
		}
		if string(kept) != "123456789" || string(p.RequestID) != `"ab"` {
			t.Errorf("kept id = %s, new id = %s; want 123456789 and \"ab\"", kept, p.RequestID)
		}
	})
}

package protocol_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// envelope is the generic decoding of an encoded message, members raw.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *protocol.Error `json:"error"`
}

func mustEnvelope(t *testing.T, b []byte) (envelope, map[string]json.RawMessage) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("not valid JSON: %s", b)
	}
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if e.JSONRPC != "2.0" {
		t.Fatalf("jsonrpc = %q in %s", e.JSONRPC, b)
	}
	return e, members
}

// idKind says how a raw JSON id decodes: "number", "string" or "null".
func idKind(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("id %q: %v", raw, err)
	}
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	case nil:
		return "null"
	}
	t.Fatalf("id %q has type %T", raw, v)
	return ""
}

var idCases = []struct {
	name string
	id   protocol.ID
	kind string
}{
	{"number", protocol.ID(`1`), "number"},
	{"string that looks like a number", protocol.ID(`"1"`), "string"},
	{"IntID", protocol.IntID(99), "number"},
	{"string", protocol.ID(`"abc-\u00e9"`), "string"},
	{"big number", protocol.ID(`12345678901234567890`), "number"},
}

func TestAppendResult(t *testing.T) {
	for _, tc := range idCases {
		t.Run(tc.name, func(t *testing.T) {
			b := protocol.AppendResult(nil, tc.id, []byte(`{"tools":[],"n":1}`))
			e, _ := mustEnvelope(t, b)
			if string(e.ID) != string(tc.id) || idKind(t, e.ID) != tc.kind {
				t.Errorf("id = %s, want %s (%s)", e.ID, tc.id, tc.kind)
			}
			if string(e.Result) != `{"tools":[],"n":1}` {
				t.Errorf("result = %s", e.Result)
			}
			msg, id, perr := protocol.Decode(b)
			if perr != nil {
				t.Fatalf("Decode(%s): %v", b, perr)
			}
			if msg.Kind != protocol.KindResponse || string(id) != string(tc.id) || string(msg.Result) != `{"tools":[],"n":1}` {
				t.Errorf("Decode = kind %d id %s result %s", msg.Kind, id, msg.Result)
			}
		})
	}
	t.Run("nil result is an empty object", func(t *testing.T) {
		b := protocol.AppendResult(nil, protocol.ID(`3`), nil)
		e, _ := mustEnvelope(t, b)
		if string(e.Result) != `{}` {
			t.Errorf("result = %s, want {}", e.Result)
		}
	})
	t.Run("zero id is null", func(t *testing.T) {
		b := protocol.AppendResult(nil, nil, []byte(`{}`))
		_, m := mustEnvelope(t, b)
		if string(m["id"]) != "null" {
			t.Errorf("id = %s, want null", m["id"])
		}
	})
	t.Run("appends to dst", func(t *testing.T) {
		dst := append(make([]byte, 0, 64), "data: "...)
		b := protocol.AppendResult(dst, protocol.ID(`1`), []byte(`{}`))
		rest, ok := bytes.CutPrefix(b, []byte("data: "))
		if !ok {
			t.Fatalf("prefix lost: %s", b)
		}
		mustEnvelope(t, rest)
	})
}

func TestAppendError(t *testing.T) {
	messages := []struct{ name, msg string }{
		{"plain", "method not found: foo"},
		{"empty", ""},
		{"quotes", `say "hi" to 'them'`},
		{"backslash", `C:\path\to\file \u0041 \n`},
		{"control chars", "nul\x00 bell\x07 tab\t nl\n cr\r esc\x1b unit\x1f"},
		{"non-ASCII", "héllo wörld 世界 😀 \u200f\u2028\u2029"},
		{"HTML", "<script>alert('x')</script> & more"},
		{"DEL", "del\x7f"},
	}
	for _, idc := range idCases {
		for _, mc := range messages {
			t.Run(idc.name+"/"+mc.name, func(t *testing.T) {
				in := &protocol.Error{Code: protocol.CodeInvalidParams, Message: mc.msg}
				b := protocol.AppendError(nil, idc.id, in)
				e, m := mustEnvelope(t, b)
				if string(e.ID) != string(idc.id) || idKind(t, e.ID) != idc.kind {
					t.Errorf("id = %s, want %s (%s)", e.ID, idc.id, idc.kind)
				}
				if _, ok := m["result"]; ok {
					t.Errorf("error response has a result member: %s", b)
				}
				if e.Error == nil || e.Error.Code != in.Code || e.Error.Message != mc.msg {
					t.Fatalf("error = %+v, want code %d message %q", e.Error, in.Code, mc.msg)
				}
				msg, id, perr := protocol.Decode(b)
				if perr != nil {
					t.Fatalf("Decode(%s): %v", b, perr)
				}
				if msg.Kind != protocol.KindResponse || string(id) != string(idc.id) {
					t.Errorf("Decode = kind %d id %s", msg.Kind, id)
				}
				if msg.Error == nil || msg.Error.Code != in.Code || msg.Error.Message != mc.msg {
					t.Errorf("decoded error = %+v", msg.Error)
				}
			})
		}
	}
	t.Run("empty message decodes", func(t *testing.T) {
		b := protocol.AppendError(nil, protocol.ID(`1`), &protocol.Error{Code: -32000})
		msg, _, perr := protocol.Decode(b)
		if perr != nil || msg.Error == nil || msg.Error.Code != -32000 {
			t.Fatalf("Decode(%s) = %+v, %v", b, msg, perr)
		}
	})
	t.Run("zero id is null", func(t *testing.T) {
		b := protocol.AppendError(nil, nil, protocol.Errorf(protocol.CodeParseError, "parse error"))
		e, m := mustEnvelope(t, b)
		if string(m["id"]) != "null" {
			t.Errorf("id = %s, want null", m["id"])
		}
		if e.Error.Code != protocol.CodeParseError {
			t.Errorf("code = %d", e.Error.Code)
		}
		msg, id, perr := protocol.Decode(b)
		if perr != nil || msg.Kind != protocol.KindResponse || !id.IsZero() {
			t.Fatalf("Decode(%s) = %+v %q %v", b, msg, id, perr)
		}
	})
	t.Run("data", func(t *testing.T) {
		in := protocol.Errorf(protocol.CodeResourceNotFound, "resource not found: %s", "x://y").
			WithData(map[string]string{"uri": "x://y"})
		b := protocol.AppendError(nil, protocol.ID(`"r"`), in)
		e, _ := mustEnvelope(t, b)
		if string(e.Error.Data) != `{"uri":"x://y"}` {
			t.Errorf("data = %s", e.Error.Data)
		}
		if e.Error.Code != protocol.CodeResourceNotFound || e.Error.Message != "resource not found: x://y" {
			t.Errorf("error = %+v", e.Error)
		}
	})
	// Error data comes from handlers as raw JSON. It is compacted on the
	// way out: data that is not valid JSON is dropped rather than breaking
	// the message, and a raw newline in it would end an SSE data line early.
	t.Run("data is validated and compacted", func(t *testing.T) {
		for _, tc := range []struct {
			name, data string
			want       string // "" when the data must be dropped
		}{
			{"truncated object", `{"uri":`, ""},
			{"bare word", `not json`, ""},
			{"trailing garbage", `{"a":1} x`, ""},
			{"whitespace only", " \n\t ", ""},
			{"newlines and indentation", "{\n  \"uri\" : \"x://y\",\n  \"n\": [ 1, 2 ]\n}\n", `{"uri":"x://y","n":[1,2]}`},
			{"CRLF around a string", "\r\n\"s\"\r\n", `"s"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				in := &protocol.Error{Code: protocol.CodeInvalidParams, Message: "bad", Data: json.RawMessage(tc.data)}
				b := protocol.AppendError(nil, protocol.ID(`1`), in)
				if bytes.ContainsAny(b, "\r\n") {
					t.Errorf("raw line break in %q", b)
				}
				e, m := mustEnvelope(t, b)
				if e.Error == nil || e.Error.Code != in.Code || e.Error.Message != "bad" {
					t.Fatalf("error = %+v in %s", e.Error, b)
				}
				var errMembers map[string]json.RawMessage
				if err := json.Unmarshal(m["error"], &errMembers); err != nil {
					t.Fatal(err)
				}
				got, has := errMembers["data"]
				switch {
				case tc.want == "" && has:
					t.Errorf("invalid data kept as %s in %s", got, b)
				case tc.want != "" && string(got) != tc.want:
					t.Errorf("data = %s, want %s", got, tc.want)
				}
				if _, _, perr := protocol.Decode(b); perr != nil {
					t.Errorf("Decode(%s): %v", b, perr)
				}
			})
		}
	})
	t.Run("invalid UTF-8 message still gives valid JSON", func(t *testing.T) {
		b := protocol.AppendError(nil, protocol.ID(`1`), &protocol.Error{Code: -1, Message: "bad \xff\xfe byte"})
		if !json.Valid(b) {
			t.Fatalf("not valid JSON: %q", b)
		}
		if _, _, perr := protocol.Decode(b); perr != nil {
			t.Fatalf("Decode: %v", perr)
		}
	})
}

func TestAppendRequest(t *testing.T) {
	for _, tc := range idCases {
		t.Run(tc.name, func(t *testing.T) {
			b := protocol.AppendRequest(nil, tc.id, "roots/list", []byte(`{"a":[1,2]}`))
			e, _ := mustEnvelope(t, b)
			if string(e.ID) != string(tc.id) || idKind(t, e.ID) != tc.kind {
				t.Errorf("id = %s, want %s (%s)", e.ID, tc.id, tc.kind)
			}
			if e.Method != "roots/list" || string(e.Params) != `{"a":[1,2]}` {
				t.Errorf("method %q params %s", e.Method, e.Params)
			}
			msg, id, perr := protocol.Decode(b)
			if perr != nil {
				t.Fatalf("Decode(%s): %v", b, perr)
			}
			if msg.Kind != protocol.KindRequest || string(id) != string(tc.id) || msg.Method != "roots/list" || string(msg.Params) != `{"a":[1,2]}` {
				t.Errorf("Decode = %+v id %s", msg, id)
			}
		})
	}
	t.Run("notification has no id", func(t *testing.T) {
		b := protocol.AppendRequest(nil, nil, protocol.NotificationProgress, []byte(`{"progressToken":1,"progress":2}`))
		_, m := mustEnvelope(t, b)
		if _, ok := m["id"]; ok {
			t.Errorf("notification has an id member: %s", b)
		}
		msg, id, perr := protocol.Decode(b)
		if perr != nil || msg.Kind != protocol.KindNotification || !id.IsZero() || msg.Method != protocol.NotificationProgress {
			t.Fatalf("Decode(%s) = %+v %q %v", b, msg, id, perr)
		}
	})
	t.Run("nil params has no params member", func(t *testing.T) {
		b := protocol.AppendRequest(nil, protocol.IntID(1), "ping", nil)
		_, m := mustEnvelope(t, b)
		if _, ok := m["params"]; ok {
			t.Errorf("params member present: %s", b)
		}
	})
	t.Run("method needing escaping", func(t *testing.T) {
		method := "we\"ird\\method\n😀"
		b := protocol.AppendRequest(nil, protocol.IntID(1), method, nil)
		msg, _, perr := protocol.Decode(b)
		if perr != nil || msg.Method != method {
			t.Fatalf("Decode(%s) = %+v %v", b, msg, perr)
		}
	})
}

func TestMarshalNotification(t *testing.T) {
	b, err := protocol.MarshalNotification(protocol.NotificationMessage, protocol.LoggingMessageParams{
		Level: protocol.LevelWarning, Logger: "db", Data: "a < b && c > d",
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, id, perr := protocol.Decode(b)
	if perr != nil || msg.Kind != protocol.KindNotification || !id.IsZero() {
		t.Fatalf("Decode(%s) = %+v %v", b, msg, perr)
	}
	if want := `{"level":"warning","logger":"db","data":"a < b && c > d"}`; string(msg.Params) != want {
		t.Errorf("params = %s, want %s (no HTML escaping)", msg.Params, want)
	}

	b, err = protocol.MarshalNotification(protocol.NotificationToolsListChanged, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}

	if _, err := protocol.MarshalNotification("x", map[string]any{"c": make(chan int)}); err == nil {
		t.Error("unmarshallable params: want an error")
	}
}

func TestMarshal(t *testing.T) {
	b, err := protocol.Marshal(map[string]string{"s": "<a & b>"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"s":"<a & b>"}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	if bytes.HasSuffix(b, []byte("\n")) {
		t.Error("Marshal kept the encoder's trailing newline")
	}
}

func TestErrorHelpers(t *testing.T) {
	e := protocol.Errorf(protocol.CodeInvalidParams, "bad %s %d", "x", 3)
	if e.Code != protocol.CodeInvalidParams || e.Message != "bad x 3" {
		t.Fatalf("Errorf = %+v", e)
	}
	if s := e.Error(); !strings.Contains(s, "-32602") || !strings.Contains(s, "bad x 3") {
		t.Errorf("Error() = %q", s)
	}
	d := e.WithData(map[string]int{"n": 1})
	if string(d.Data) != `{"n":1}` || d.Code != e.Code || d.Message != e.Message {
		t.Errorf("WithData = %+v", d)
	}
	if e.Data != nil {
		t.Errorf("WithData modified the receiver: %s", e.Data)
	}
	if bad := e.WithData(make(chan int)); bad.Data != nil || bad.Message != e.Message {
		t.Errorf("unmarshallable data: %+v", bad)
	}
}

func TestLoggingLevel(t *testing.T) {
	order := []protocol.LoggingLevel{
		protocol.LevelDebug, protocol.LevelInfo, protocol.LevelNotice, protocol.LevelWarning,
		protocol.LevelError, protocol.LevelCritical, protocol.LevelAlert, protocol.LevelEmergency,
	}
	for i, l := range order {
		if !l.Valid() {
			t.Errorf("%s not valid", l)
		}
		if i > 0 && l.Severity() <= order[i-1].Severity() {
			t.Errorf("severity %s (%d) <= %s (%d)", l, l.Severity(), order[i-1], order[i-1].Severity())
		}
	}
	for _, l := range []protocol.LoggingLevel{"", "DEBUG", "warn", "verbose"} {
		if l.Valid() || l.Severity() != 0 {
			t.Errorf("%q: valid %v severity %d", l, l.Valid(), l.Severity())
		}
	}
}

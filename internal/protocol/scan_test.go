package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// The hand-written scanners and encoders on the hot path (scan.go, any.go,
// AppendString, AppendToolResult) must agree with encoding/json, which is
// the reference here.

var jsonSamples = []string{
	`{}`,
	`[]`,
	`null`,
	`true`,
	`false`,
	`0`,
	`-1.5e+10`,
	`12345678901234567890`,
	`""`,
	`"plain"`,
	`"esc \"q\" \\ \/ \b\f\n\r\t \u0000 \u00e9 \ud83d\ude00"`,
	`"raw é 😀 ` + "\u2028\u2029" + `"`,
	`{"a":1,"b":[1,2,{"c":null}],"d":{"e":"f"},"g":true,"h":false}`,
	` { "a" : 1 , "b" : [ 1 , 2 ] , "c" : { } , "d" : [ ] } `,
	"{\n\t\"a\":\r\n1\n}",
	`{"a":1,"a":2}`,
	`{"k\"ey":1,"k\\ey":2,"k\u0065y":3,"":4}`,
	`{"a":"}","b":"]","c":",","d":"{[\""}`,
	`{"n":-0,"m":1E5,"o":0.000001,"p":1e-7}`,
	`[[[[[[[[[[{"deep":[[[]]]}]]]]]]]]]]`,
	` [ 1 , "a,]" , { "b" : [ 2 ] } , null ] `,
	`{"text":"hello","count":3,"tags":["x","y"],"opts":{"n":1.0}}`,
}

// decodeNumber is the reference for DecodeAny: encoding/json with UseNumber.
func decodeNumber(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("reference decode of %q: %v", data, err)
	}
	return v
}

func TestDecodeAnyMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		t.Run(s, func(t *testing.T) {
			got, err := protocol.DecodeAny([]byte(s))
			if err != nil {
				t.Fatalf("DecodeAny: %v", err)
			}
			if want := decodeNumber(t, []byte(s)); !reflect.DeepEqual(got, want) {
				t.Fatalf("DecodeAny = %#v, want %#v", got, want)
			}
		})
	}
	for _, bad := range []string{``, ` `, `{`, `{"a":}`, `[1,]`, `"x`, `01`, `{"a":1}x`, `nul`, `{'a':1}`} {
		if v, err := protocol.DecodeAny([]byte(bad)); err == nil {
			t.Errorf("DecodeAny(%q) = %#v, want an error", bad, v)
		}
	}
}

func TestLookupMembers(t *testing.T) {
	data := []byte(` {"name" : "text_echo", "arguments":{"text":"a,b}"} ,"_meta":{"progressToken":7},"n":12 ,"name2":null, "Name":"X"} `)
	keys := []string{"name", "arguments", "_meta", "n", "name2", "missing", "NAME"}
	got := make([]json.RawMessage, len(keys))
	if err := protocol.LookupMembers(data, keys, got); err != nil {
		t.Fatal(err)
	}
	want := []string{`"text_echo"`, `{"text":"a,b}"}`, `{"progressToken":7}`, `12`, `null`, ``, ``}
	for i, k := range keys {
		if string(got[i]) != want[i] {
			t.Errorf("%s = %q, want %q", k, got[i], want[i])
		}
		if want[i] == "" && got[i] != nil {
			t.Errorf("%s: absent member is %q, want nil", k, got[i])
		}
	}
	// Last occurrence wins, as with encoding/json.
	if err := protocol.LookupMembers([]byte(`{"a":1,"a":2}`), []string{"a"}, got[:1]); err != nil || string(got[0]) != "2" {
		t.Errorf("duplicate key: %q %v", got[0], err)
	}
	// Escaped keys are compared unescaped.
	if err := protocol.LookupMembers([]byte(`{"n\u0061me":"x"}`), []string{"name"}, got[:1]); err != nil || string(got[0]) != `"x"` {
		t.Errorf("escaped key: %q %v", got[0], err)
	}
	for _, notObject := range []string{`[]`, `"s"`, `1`, `null`} {
		got[0] = nil
		if err := protocol.LookupMembers([]byte(notObject), []string{"a"}, got[:1]); err == nil {
			t.Errorf("LookupMembers(%s): want an error", notObject)
		}
	}
}

// lookupReference is LookupMembers by encoding/json: every member of an
// object, exact-case keys, last occurrence winning.
func lookupReference(t testing.TB, data []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("reference: %v", err)
	}
	return m
}

func TestLookupMembersMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		if !strings.HasPrefix(strings.TrimSpace(s), "{") {
			continue
		}
		checkLookup(t, []byte(s))
	}
}

func checkLookup(t testing.TB, data []byte) {
	t.Helper()
	want := lookupReference(t, data)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	got := make([]json.RawMessage, len(keys))
	if err := protocol.LookupMembers(data, keys, got); err != nil {
		t.Fatalf("LookupMembers(%q): %v", data, err)
	}
	for i, k := range keys {
		if !bytes.Equal(got[i], want[k]) {
			t.Fatalf("LookupMembers(%q)[%q] = %q, want %q", data, k, got[i], want[k])
		}
	}
}

var stringSamples = []string{
	"",
	"plain ascii",
	`quote " backslash \ slash /`,
	"controls \x00\x01\x07\b\f\n\r\t\x1b\x1f\x7f",
	"non-ASCII é ü 世界 😀 \u200f\u202e",
	"separators \u2028 and \u2029",
	"HTML <script>&amp;</script>",
	"invalid \xff\xfe bytes \xc3 truncated",
	"lone surrogate bytes \xed\xa0\x80",
	"\xf4\x90\x80\x80 above U+10FFFF",
	strings.Repeat("long ", 1000),
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringSamples {
		t.Run(s[:min(len(s), 20)], func(t *testing.T) {
			checkAppendString(t, s)
		})
	}
}

func checkAppendString(t testing.TB, s string) {
	t.Helper()
	got := protocol.AppendString([]byte("prefix:"), s)
	enc, ok := bytes.CutPrefix(got, []byte("prefix:"))
	if !ok {
		t.Fatalf("AppendString lost dst: %q", got)
	}
	if !json.Valid(enc) {
		t.Fatalf("AppendString(%q) = %q is not valid JSON", s, enc)
	}
	var back string
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	ref, _ := json.Marshal(s)
	var want string
	if err := json.Unmarshal(ref, &want); err != nil {
		t.Fatal(err)
	}
	if back != want {
		t.Fatalf("AppendString(%q) decodes to %q, encoding/json gives %q", s, back, want)
	}
	if utf8.ValidString(s) && back != s {
		t.Fatalf("valid string %q did not round-trip: %q", s, back)
	}
	// Raw U+2028/U+2029 break JavaScript parsers; encoding/json escapes them.
	if bytes.Contains(enc, []byte("\u2028")) || bytes.Contains(enc, []byte("\u2029")) {
		t.Fatalf("AppendString(%q) left U+2028/U+2029 unescaped: %q", s, enc)
	}
	if bytes.ContainsFunc(enc, func(r rune) bool { return r < 0x20 }) {
		t.Fatalf("AppendString(%q) left a control character unescaped: %q", s, enc)
	}
}

func TestAppendToolResultMatchesMarshal(t *testing.T) {
	prio := 1.0
	results := map[string]*protocol.CallToolResult{
		"text":  {Content: []protocol.Content{protocol.TextContent(`{"success":true}`)}},
		"empty": {Content: []protocol.Content{}},
		"text escapes": {Content: []protocol.Content{
			protocol.TextContent("a\"b\\c\nd\x00e\u2028f 😀 <&>"),
			protocol.TextContent(""),
		}},
		"mixed": {Content: []protocol.Content{
			protocol.TextContent("t"),
			protocol.ImageContent("AAAA", "image/png"),
			protocol.AudioContent("", ""),
			protocol.EmbeddedResource(protocol.ResourceContents{URI: "x://r", Blob: "AA==", IsBlob: true}),
			{Type: protocol.ContentResourceLink, URI: "x://l", Name: "l"},
			{Type: protocol.ContentText, Text: "annotated", Annotations: &protocol.Annotations{Audience: []string{"assistant"}, Priority: &prio}},
		}},
		"structured": {
			Content:           []protocol.Content{protocol.TextContent(`{"a":1}`)},
			StructuredContent: json.RawMessage("{ \"a\" : 1,\n \"b\": [ 1, 2 ] }"),
		},
		"error": {Content: []protocol.Content{protocol.TextContent("boom")}, IsError: true},
		"structured compact": {
			Content:           []protocol.Content{protocol.TextContent(`{"a":1}`)},
			StructuredContent: json.RawMessage(`{"a":1,"b":[1,2]}`),
			StructuredCompact: true,
		},
	}
	for name, r := range results {
		t.Run(name, func(t *testing.T) {
			got, err := protocol.AppendToolResult(nil, r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := protocol.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("not valid JSON: %s", got)
			}
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("AppendToolResult = %s\nencoding/json      = %s", got, want)
			}

			resp, err := protocol.AppendResponse([]byte("x"), protocol.ID(`"7"`), r)
			if err != nil {
				t.Fatal(err)
			}
			msg, id, perr := protocol.Decode(resp[1:])
			if perr != nil || msg.Kind != protocol.KindResponse || string(id) != `"7"` {
				t.Fatalf("Decode(%s) = %+v %q %v", resp[1:], msg, id, perr)
			}
			var res any
			_ = json.Unmarshal(msg.Result, &res)
			if !reflect.DeepEqual(res, w) {
				t.Fatalf("AppendResponse result = %s, want %s", msg.Result, want)
			}
		})
	}
	// StructuredCompact is the producer's promise: the bytes are copied as
	// they are, so the encoder does no second pass over them.
	t.Run("compact structured content is copied as is", func(t *testing.T) {
		r := &protocol.CallToolResult{Content: []protocol.Content{}, StructuredContent: json.RawMessage(`{"a": 1}`), StructuredCompact: true}
		if got, err := protocol.AppendToolResult(nil, r); err != nil || string(got) != `{"content":[],"structuredContent":{"a": 1}}` {
			t.Fatalf("AppendToolResult = %s, %v", got, err)
		}
		r.StructuredCompact = false
		if got, err := protocol.AppendToolResult(nil, r); err != nil || string(got) != `{"content":[],"structuredContent":{"a":1}}` {
			t.Fatalf("AppendToolResult = %s, %v", got, err)
		}
	})
	t.Run("nil content is an empty array", func(t *testing.T) {
		got, err := protocol.AppendToolResult(nil, &protocol.CallToolResult{})
		if err != nil || string(got) != `{"content":[]}` {
			t.Fatalf("AppendToolResult = %s, %v", got, err)
		}
	})
	t.Run("invalid structured content is an error", func(t *testing.T) {
		r := &protocol.CallToolResult{Content: []protocol.Content{}, StructuredContent: json.RawMessage(`{"a":`)}
		if got, err := protocol.AppendToolResult(nil, r); err == nil {
			t.Fatalf("AppendToolResult = %s, want an error", got)
		}
		if got, err := protocol.AppendResponse(nil, protocol.IntID(1), r); err == nil {
			t.Fatalf("AppendResponse = %s, want an error", got)
		}
	})
	// MCP (server/tools): structuredContent is a JSON object. Anything else
	// valid as JSON (null, an array, a scalar) is refused by the encoder too,
	// so the client never receives a result it must reject.
	t.Run("structured content that is not an object is an error", func(t *testing.T) {
		for _, sc := range []string{`null`, `[1]`, `[]`, `"text"`, `42`, `true`, " \n[{\"a\":1}]"} {
			r := &protocol.CallToolResult{Content: []protocol.Content{}, StructuredContent: json.RawMessage(sc)}
			if got, err := protocol.AppendToolResult(nil, r); err == nil {
				t.Errorf("AppendToolResult(structuredContent %q) = %s, want an error", sc, got)
			}
			if got, err := protocol.AppendResponse(nil, protocol.IntID(1), r); err == nil {
				t.Errorf("AppendResponse(structuredContent %q) = %s, want an error", sc, got)
			}
		}
		// An object after leading whitespace is fine.
		r := &protocol.CallToolResult{Content: []protocol.Content{}, StructuredContent: json.RawMessage(" \n {\"a\": 1}")}
		if got, err := protocol.AppendToolResult(nil, r); err != nil || string(got) != `{"content":[],"structuredContent":{"a":1}}` {
			t.Errorf("AppendToolResult = %s, %v", got, err)
		}
	})
	t.Run("whitespace-only structured content is an error, not a panic", func(t *testing.T) {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("AppendToolResult panicked: %v", v)
			}
		}()
		r := &protocol.CallToolResult{Content: []protocol.Content{}, StructuredContent: json.RawMessage(" \n ")}
		if got, err := protocol.AppendToolResult(nil, r); err == nil {
			t.Errorf("AppendToolResult = %s, want an error", got)
		}
	})
	t.Run("other results use encoding/json", func(t *testing.T) {
		got, err := protocol.AppendResponse(nil, protocol.IntID(3), &protocol.ListToolsResult{Tools: []protocol.Tool{}})
		if err != nil || string(got) != `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}` {
			t.Fatalf("AppendResponse = %s, %v", got, err)
		}
		if got, err := protocol.AppendResponse(nil, protocol.IntID(3), map[string]any{"c": make(chan int)}); err == nil {
			t.Fatalf("AppendResponse = %s, want an error", got)
		}
	})
}

// FuzzScanners checks the hand-written hot-path scanners and the string
// encoder against encoding/json on arbitrary input.
func FuzzScanners(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add([]byte(s))
	}
	for _, s := range stringSamples {
		f.Add([]byte(s))
	}
	for _, tc := range decodeCases {
		f.Add([]byte(tc.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAppendString(t, string(data))
		v, err := protocol.DecodeAny(data)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("DecodeAny accepted invalid JSON %q as %#v", data, v)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeAny(%q): %v", data, err)
		}
		if !utf8.Valid(data) {
			// encoding/json replaces invalid bytes with U+FFFD; the
			// scanners only ever see bodies Decode has checked for UTF-8.
			return
		}
		if want := decodeNumber(t, data); !reflect.DeepEqual(v, want) {
			t.Fatalf("DecodeAny(%q) = %#v, want %#v", data, v, want)
		}
		if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
			checkLookup(t, data)
		}
	})
}

// EachElement slices out what encoding/json decodes into []json.RawMessage.
func TestEachElementMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		t.Run(s, func(t *testing.T) {
			var want []json.RawMessage
			wantErr := json.Unmarshal([]byte(s), &want) != nil || strings.TrimSpace(s) == "null"
			var got []json.RawMessage
			err := protocol.EachElement([]byte(s), func(v []byte) bool {
				got = append(got, v)
				return true
			})
			if (err != nil) != wantErr {
				t.Fatalf("EachElement error = %v, want an error: %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if len(got) != len(want) {
				t.Fatalf("EachElement gave %d elements, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(bytes.TrimSpace(got[i]), bytes.TrimSpace(want[i])) {
					t.Errorf("element %d = %s, want %s", i, got[i], want[i])
				}
			}
		})
	}
}

// StringValue reads what encoding/json decodes into a string, and refuses
// every other kind of value.
func TestStringValueMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		t.Run(s, func(t *testing.T) {
			var want string
			wantOK := json.Unmarshal([]byte(s), &want) == nil && strings.HasPrefix(s, `"`)
			got, ok := protocol.StringValue([]byte(s))
			if ok != wantOK || got != want {
				t.Fatalf("StringValue = %q, %v; want %q, %v", got, ok, want, wantOK)
			}
		})
	}
}

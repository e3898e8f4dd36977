package response_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

// decodeJSON decodes with numbers kept as text, so any valid JSON decodes.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// FuzzSuccess feeds arbitrary bytes as raw data under small limits: Success
// never panics, refuses invalid JSON, and otherwise returns a valid result
// within the limit whose data, when nothing was cut, means what the input
// meant.
func FuzzSuccess(f *testing.F) {
	for _, seed := range []string{
		`null`, `{}`, `[]`, `""`, `0`, `-1.5e+300`, `true`,
		`{"a":[1,2,3,4,5,6,7,8,9,10],"b":"text"}`,
		` [ {"k" : "v"} , [ [ [1] ] ] ] `,
		`"\u003c\u003e\u0026\/\b\f\n\r\t\"\\"`,
		`"\ud83d\ude00 \ud800 \udc00x \ud83d\u0041"`,
		"\"\u2028\u2029 \xff\xfe é\"",
		`{"\u00e9":"\u00e9","dup":1,"dup":2}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"a":`, `[1,]`, "\"\x01\"", ``,
	} {
		f.Add([]byte(seed), uint16(0), uint8(3), uint16(10))
	}
	s := compileEnvelopeSchema(f)
	f.Fuzz(func(t *testing.T, data []byte, size uint16, items uint8, runes uint16) {
		l := response.Limits{
			MaxResponseBytes: 1024 + int(size%8192),
			MaxListItems:     1 + int(items%16),
			MaxStringLength:  16 + int(runes%256),
			TruncationSuffix: "... [truncated]",
		}
		r, err := response.Success(json.RawMessage(data), response.Metadata{DurationMs: 1}, l)
		if len(data) > 0 && !json.Valid(data) {
			if err == nil {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid JSON %q refused: %v", data, err)
		}
		env, n := checkResult(t, s, r)
		if n > l.MaxResponseBytes {
			t.Fatalf("%d bytes > %d", n, l.MaxResponseBytes)
		}
		if env.truncated() || len(data) == 0 {
			return
		}
		if got, want := decodeJSON(t, env.Data), decodeJSON(t, data); !reflect.DeepEqual(got, want) {
			t.Fatalf("data changed without truncation:\n in  %q\n out %q", data, env.Data)
		}
	})
}

// The data is written in canonical form: compact, no HTML escapes, escapes
// decoded where UTF-8 will do, \u2028/\u2029 and control characters
// escaped, invalid UTF-8 and lone surrogates replaced.
func TestCanonicalData(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{` { "a" : [ 1 , 2 ] } `, `{"a":[1,2]}`},
		{`"\u003c\u003E\u0026"`, `"<>&"`},
		{`"\/\b\f\n\r\t\"\\"`, `"/\u0008\u000c\n\r\t\"\\"`},
		{`"\u00e9\u4e2d\ud83d\ude00"`, `"é中😀"`},
		{`"\ud800x\udc00\ud83d\u0041"`, `"�x��A"`},
		{`"\u0000\u001F\u2028\u2029"`, `"\u0000\u001f\u2028\u2029"`},
		{"\"\u2028\xff\"", `"\u2028\ufffd"`},
		{`1e10`, `1e10`},
	} {
		r, err := response.Success(json.RawMessage(tc.in), response.Metadata{}, response.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		env, _ := checkResult(t, nil, r)
		if string(env.Data) != tc.want {
			t.Errorf("%s: data %s, want %s", tc.in, env.Data, tc.want)
		}
	}
	// Go values: no HTML escaping, as protocol.Marshal.
	r, _ := response.Success(map[string]string{"<k>": "a&b"}, response.Metadata{}, response.DefaultLimits())
	if env, _ := checkResult(t, nil, r); string(env.Data) != `{"<k>":"a&b"}` {
		t.Errorf("data %s", env.Data)
	}
}

// Data nests at most 512 levels, list objects included; deeper data, even
// as deep as encoding/json accepts, falls back to the note.
func TestDeepNesting(t *testing.T) {
	s := compileEnvelopeSchema(t)
	nested := func(depth int, inner string) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", depth) + inner + strings.Repeat("]", depth))
	}
	// Each level holds a list and a number: with maxListItems 1, every
	// level becomes a list object, which doubles the nesting.
	pairs := func(depth int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", depth) + "0" + strings.Repeat(",0]", depth))
	}
	const deep = `{"truncated":true,"reason":"data nests deeper than 512 levels","originalBytes":`
	for _, tc := range []struct {
		name          string
		data          json.RawMessage
		items         int
		cut, fallback bool
	}{
		{"512 levels", nested(512, ""), 100, false, false},
		{"513 levels", nested(513, ""), 100, true, true},
		{"9999 levels", nested(9999, ""), 100, true, true},
		{"255 list objects", pairs(255), 1, true, false},
		{"300 list objects", pairs(300), 1, true, true},
		{"300 levels within the list limit", pairs(300), 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := response.DefaultLimits()
			l.MaxListItems = tc.items
			r, err := response.Success(tc.data, response.Metadata{}, l)
			if err != nil {
				t.Fatal(err)
			}
			env, _ := checkResult(t, s, r)
			if env.truncated() != tc.cut || tc.fallback != strings.HasPrefix(string(env.Data), deep) {
				t.Fatalf("truncated %v, data %.120s", env.truncated(), env.Data)
			}
		})
	}
	t.Run("context", func(t *testing.T) {
		e := response.NewError(response.CodeInvalidInput, "x").WithContext("v", nested(600, ""))
		env, _ := checkResult(t, s, response.Failure(e, response.Metadata{}, response.DefaultLimits()))
		if se := env.err(t); !env.truncated() || se.Context != nil {
			t.Fatalf("got %.120s", env.Error)
		}
	})
}

package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// canonSeeds are documents rich in what canonicalJSON rewrites or refuses:
// the fuzz target's seed corpus and the benchmark's inputs.
var canonSeeds = []string{
	`{"bb":1,"a":2,"c":3,"é":4,"":5}`,
	` [ 1E2 , 1.0, -0, -0.0, 1.50, 100e-2, 1e-5, 0.0e5, 12.50e-1, -1.5e3, 0e-3 ] `,
	`["\u00e9\/\u001F\u007f\uD83D\uDE00\n\"\\", "\u0001\b\f\r\t"]`,
	`{"\u0062b":1,"\u00e9":2,"a\n":3,"z":{"y":[{"b":1,"a":2}],"x":0}}`,
	`[5e-324, -1.7976931348623157e308, 123456789012345678901234567890]`,
	`{"items":[1,2,3,1e131071]}`, `0e1073741823`, `[1e-399]`,
	`{"a":"\udfff"}`, `["\ud800"]`, `["\ud800\u0041"]`, `{"s":"a\u0000b","k\u0000":1}`,
	"[\"a\xffb\"]", "[\"\xed\xa0\x80\"]", `{"a":{"x":1,"x":2}}`, `{"a":1,"\u0061":2}`,
	`[[[[[[[[[[0]]]]]]]]]]`, `{"a/b":{"c~d":1e999}}`, `[true,false,null,"",{},[]]`,
	`{"url":`, `[01]`, `[1.]`, `-`, `"\u12"`, `{"a" 1}`, `[1,]`, `  `,
}

func TestCanonicalJSON(t *testing.T) {
	lim := JSONLimits{MaxBytes: 1 << 10, MaxDepth: 4, MaxNumberLength: 20}
	cases := []struct{ in, want, field, reason string }{
		{in: ` { "bb" : 1 , "a" : [ 2 ] } `, want: `{"a":[2],"bb":1}`},
		{in: `[1E2,1.0,-0,-0.0,1.50,100e-2,1e-5,0.0e5,12.50e-1,-1.5e3,0e-3]`, want: `[100,1.0,0,0.0,1.50,1.00,0.00001,0,1.250,-1500,0.000]`},
		{in: `[0.00000000000000000001e20, 0.00e1, 1e0, -12.5e-1]`, want: `[1,0.0,1,-1.25]`},
		{in: `"\u00e9\/\u001F\u007f"`, want: "\"é/\\u001f\x7f\""},
		{in: `{"a":{"b":{"c":[0]}}}`, want: `{"a":{"b":{"c":[0]}}}`},
		{in: `1e20`, field: "/value", reason: "is 21 characters long; the limit is 20"},
		{in: `123456789012345678901`, field: "/value", reason: "is 21 characters long"},
		{in: `0e21`, field: "/value", reason: "exponent 21; the limit is ±20"},
		{in: `0e-20`, field: "/value", reason: "is 22 characters long"},
		{in: `{"a":{"b":{"c":{"d":{}}}}}`, field: "/value/a/b/c/d", reason: "nested deeper than the limit of 4"},
		{in: `{"a":"` + strings.Repeat("x", 1020) + `"}`, field: "value", reason: "is 1028 bytes; the limit is 1024"},
		{in: `[` + strings.Repeat("1e19,", 60) + `1]`, field: "value", reason: "as it is stored"},
		{in: `{"a":"\udfff"}`, field: "/value/a", reason: `unpaired UTF-16 surrogate (\udfff)`},
		{in: `{"b":1,"a":2,"b":3}`, field: "/value", reason: `two members named "b"`},
		{in: `[1,]`, field: "value", reason: "is not valid JSON (at byte 3)"},
		{in: `[1] [2]`, field: "value", reason: "is not valid JSON"},
		{in: " \n", field: "value", reason: "is required"},
	}
	for _, c := range cases {
		got, err := canonicalJSON("value", []byte(c.in), lim)
		if c.field == "" {
			if err != nil || string(got) != c.want {
				t.Errorf("%.60s: got %s, %v; want %s", c.in, got, err, c.want)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
			t.Errorf("%.60s: got %v; want a FieldError on %s saying %q", c.in, err, c.field, c.reason)
		}
	}
}

// FuzzCanonicalJSON: whatever arrives, canonicalJSON either refuses it with
// a FieldError on the document or a path inside it, or returns valid JSON
// within the limits, with the same meaning as the input, that it returns
// unchanged when given it again. It never accepts what encoding/json
// calls invalid.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range canonSeeds {
		f.Add([]byte(s))
	}
	lim := JSONLimits{MaxBytes: 4096, MaxDepth: 8, MaxNumberLength: 40}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := canonicalJSON("value", in, lim)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || (fe.Field != "value" && fe.Field != "/value" && !strings.HasPrefix(fe.Field, "/value/")) {
				t.Fatalf("%q: error %v is not a FieldError on the value", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted %q, which is not valid JSON", in)
		}
		if len(out) > lim.MaxBytes || !json.Valid(out) {
			t.Fatalf("%q: canonical form %q is invalid or over the limit", in, out)
		}
		again, err := canonicalJSON("value", out, lim)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("%q: canonical form %q gives %q, %v", in, out, again, err)
		}
		if !sameJSON(t, in, out) {
			t.Fatalf("%q: canonical form %q means something else", in, out)
		}
	})
}

// sameJSON reports whether two valid documents mean the same: numbers
// compared as exact decimals.
func sameJSON(t *testing.T, a, b []byte) bool {
	decode := func(doc []byte) any {
		d := json.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		return v
	}
	return equalJSON(decode(a), decode(b))
}

func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okx := new(big.Rat).SetString(a.String())
		y, oky := new(big.Rat).SetString(b.String())
		return okx && oky && x.Cmp(y) == 0
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// BenchmarkCanonicalJSON measures the validation every store write pays,
// on a typical agent memory value and on a large one, beside what the
// stores did before (json.Valid, then json.Compact into a copy).
func BenchmarkCanonicalJSON(b *testing.B) {
	typical := []byte(`{"task":"summarise the quarterly report","steps":["read","extract figures","draft"],` +
		`"progress":0.4,"owner":{"name":"researcher","model":"small"},"notes":"numbers in \u20ac, see page 12",` +
		`"done":false,"attempts":3}`)
	var large bytes.Buffer
	large.WriteByte('[')
	for i := range 2000 {
		if i > 0 {
			large.WriteByte(',')
		}
		large.Write(typical)
	}
	large.WriteByte(']')
	lim := Options{}.JSONLimits()
	for _, doc := range []struct {
		name string
		in   []byte
	}{{"typical", typical}, {"large", large.Bytes()}} {
		b.Run(doc.name+"/canonical", func(b *testing.B) {
			b.SetBytes(int64(len(doc.in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := canonicalJSON("value", doc.in, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(doc.name+"/valid+compact", func(b *testing.B) {
			b.SetBytes(int64(len(doc.in)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(doc.in) {
					b.Fatal("invalid")
				}
				var buf bytes.Buffer
				buf.Grow(len(doc.in))
				if err := json.Compact(&buf, doc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

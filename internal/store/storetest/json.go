package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// The JSON documents a store keeps (memory values, agent and session
// metadata, upstream configs) are stored and served in one canonical form
// (store/canonical.go): the text PostgreSQL's jsonb gives back, compacted.
// These tests pin it byte for byte, so the two stores cannot drift apart,
// and pin the inputs both must refuse: those PostgreSQL cannot store, and
// those whose stored form would be much larger than what was sent. The
// suite runs with the default store.Options.

// thousandHuge is a 16 KB value of a thousand numbers that jsonb would
// write out as 131,072 digits each: 131 MB stored and served.
func thousandHuge() string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"n%03d":1e131071`, i)
	}
	b.WriteByte('}')
	return b.String()
}

// nested returns n arrays, one inside the other, around 0.
func nested(n int) string { return strings.Repeat("[", n) + "0" + strings.Repeat("]", n) }

// repeated returns a JSON array of n copies of elem.
func repeated(elem string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]"
}

func testJSONDocuments(t *testing.T, h *harness) {
	t.Run("values are stored and served in the canonical form", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		longKey := strings.Repeat("k", 100_000)
		cases := []struct{ name, in, want string }{
			{"whitespace goes, members ordered by length then bytes",
				` { "bb" : 1 , "a" : 2, "c" : 3, "é": 4, "": 5 } `, `{"":5,"a":2,"c":3,"bb":1,"é":4}`},
			{"nested objects are ordered too",
				`{"z":{"y":[{"b":1,"a":2}],"x":0},"a":null}`, `{"a":null,"z":{"x":0,"y":[{"a":2,"b":1}]}}`},
			{"numbers in decimal form, fraction digits kept, no negative zero",
				`[1E2, 1.0, -0, -0.0, 1.50, 100e-2, 1e-5, 0.0e5, 12.50e-1, -1.5e3, 0e-3, 123456789012345678901234567890]`,
				`[100,1.0,0,0.0,1.50,1.00,0.00001,0,1.250,-1500,0.000,123456789012345678901234567890]`},
			{"escapes decoded and written as jsonb writes them",
				`["\u00e9\/\u001F\u007f\uD83D\uDE00\n\"\\", "\u0001\b\f\r\t"]`, "[\"é/\\u001f\x7f😀\\n\\\"\\\\\",\"\\u0001\\b\\f\\r\\t\"]"},
			{"escaped member names are ordered by their decoded bytes",
				`{"\u0062b":1,"\u00e9":2,"a\n":3}`, `{"a\n":3,"bb":1,"é":2}`},
			{"the smallest float64 is accepted, written out",
				`5e-324`, "0." + strings.Repeat("0", 323) + "5"},
			{"a number of the maximum length is accepted",
				`-1e398`, "-1" + strings.Repeat("0", 398)},
			{"a very long member name", `{"` + longKey + `":1}`, `{"` + longKey + `":1}`},
			{"a large array", repeated("0", 100_000), repeated("0", 100_000)},
			{"nesting at the depth limit", nested(store.DefaultMaxValueDepth), nested(store.DefaultMaxValueDepth)},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				key := fmt.Sprintf("k%d", i)
				got := put(t, h, tn, "ns", key, c.in)
				if string(got.Value) != c.want {
					t.Fatalf("put returned %.300s, want %.300s", got.Value, c.want)
				}
				got = must(h.s.GetMemory(ctx(t), tn, "ns", key))(t)
				if string(got.Value) != c.want {
					t.Fatalf("get returned %.300s, want %.300s", got.Value, c.want)
				}
			})
		}
	})

	t.Run("values are refused naming the path and the limit", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		tooDeep := nested(store.DefaultMaxValueDepth + 1)
		deepPath := "/value" + strings.Repeat("/0", store.DefaultMaxValueDepth)
		cases := []struct{ name, in, field, reason string }{
			{"a number jsonb writes out as 131,072 digits", `{"items":[1,2,3,1e131071]}`, "/value/items/3",
				"is a number whose decimal form (as it is stored) is 131072 characters long; the limit is 400"},
			{"a thousand of them", thousandHuge(), "/value/n000", "131072 characters long; the limit is 400"},
			{"one of them alone", `1e131071`, "/value", "the limit is 400"},
			{"a number one character too long", `[1e400]`, "/value/0", "is 401 characters long; the limit is 400"},
			{"a small fraction written out", `[1e-399]`, "/value/0", "is 401 characters long"},
			{"a long mantissa", `[` + strings.Repeat("9", 401) + `]`, "/value/0", "is 401 characters long"},
			{"a zero with a huge exponent (PostgreSQL overflows)", `0e1073741823`, "/value", "exponent 1073741823; the limit is ±400"},
			{"stored form over maxValueBytes", repeated("1e399", 2700), "value",
				fmt.Sprintf("is longer than the limit of %d bytes as it is stored", store.DefaultMaxValue)},
			{"an unpaired low surrogate", `{"a":"x\udfff"}`, "/value/a", `unpaired UTF-16 surrogate (\udfff)`},
			{"an unpaired high surrogate", `["\ud800"]`, "/value/0", `unpaired UTF-16 surrogate (\ud800)`},
			{"a high surrogate before a non-surrogate", `["\ud800\u0041"]`, "/value/0", `unpaired UTF-16 surrogate (\ud800)`},
			{"a surrogate in a member name", `{"ok":{"\udfff":1}}`, "/value/ok", `has a member name containing an unpaired UTF-16 surrogate`},
			{"NUL in a string", `{"s":"a\u0000b"}`, "/value/s", `\u0000 (NUL), which cannot be stored`},
			{"NUL in a member name", `{"k\u0000":1}`, "/value", `has a member name containing \u0000 (NUL)`},
			{"bytes that are not UTF-8", "[\"a\xffb\"]", "/value/0", "bytes that are not UTF-8"},
			{"an encoded surrogate", "[\"\xed\xa0\x80\"]", "/value/0", "bytes that are not UTF-8"},
			{"duplicate member names", `{"a":{"x":1,"y":2,"x":3}}`, "/value/a", `has two members named "x"`},
			{"duplicate member names once decoded", `{"a":1,"\u0061":2}`, "/value", `has two members named "a"`},
			{"nesting past the limit", tooDeep, deepPath,
				fmt.Sprintf("is nested deeper than the limit of %d objects and arrays", store.DefaultMaxValueDepth)},
			{"a path with '/' and '~' in member names", `{"a/b":{"c~d":1e999}}`, "/value/a~1b/c~0d", "the limit is 400"},
			{"a long member name in a path is cut", `{"` + strings.Repeat("n", 100) + `":1e999}`,
				"/value/" + strings.Repeat("n", 64) + "…", "the limit is 400"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				key := fmt.Sprintf("k%d", i)
				_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{Namespace: "ns", Key: key, Value: json.RawMessage(c.in)})
				wantField(t, err, c.field)
				if !strings.Contains(err.Error(), c.reason) {
					t.Fatalf("error %q does not say %q", err, c.reason)
				}
				_, err = h.s.GetMemory(ctx(t), tn, "ns", key)
				wantIs(t, err, store.ErrNotFound)
			})
		}
	})

	t.Run("metadata and upstream configs follow the same rules", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		a := must(h.s.RegisterAgent(ctx(t), tn, store.Agent{ID: "a", Description: "d",
			Metadata: json.RawMessage(`{"b":1, "a":1.0E1, "s":"\u00e9"}`)}))(t)
		equal(t, "agent metadata", string(a.Metadata), `{"a":10,"b":1,"s":"é"}`)
		a = must(h.s.GetAgent(ctx(t), tn, "a"))(t)
		equal(t, "agent metadata read back", string(a.Metadata), `{"a":10,"b":1,"s":"é"}`)
		s := must(h.s.CreateSession(ctx(t), tn, store.NewSession{Task: "t", Initiator: "i",
			Metadata: json.RawMessage(`{"zz":-0, "y":[1e1]}`)}))(t)
		equal(t, "session metadata", string(s.Metadata), `{"y":[10],"zz":0}`)
		s = must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "session metadata read back", string(s.Metadata), `{"y":[10],"zz":0}`)
		id := h.upstreamID()
		u := must(h.s.CreateUpstream(ctx(t), id, json.RawMessage(`{"url":"http:\/\/x", "enabled":true}`)))(t)
		equal(t, "upstream config", string(u.Config), `{"url":"http://x","enabled":true}`)
		u = must(h.s.GetUpstream(ctx(t), id))(t)
		equal(t, "upstream config read back", string(u.Config), `{"url":"http://x","enabled":true}`)

		// 888 bytes of metadata that jsonb would keep as 6.4 MB.
		huge := `{"x":[` + strings.TrimSuffix(strings.Repeat("1e65535,", 110), ",") + `]}`
		_, err := h.s.RegisterAgent(ctx(t), tn, store.Agent{ID: "b", Description: "d", Metadata: json.RawMessage(huge)})
		wantField(t, err, "/metadata/x/0")
		_, err = h.s.GetAgent(ctx(t), tn, "b")
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.CreateSession(ctx(t), tn, store.NewSession{Task: "t", Initiator: "i", Metadata: json.RawMessage(`{"s":"\udfff"}`)})
		wantField(t, err, "/metadata/s")
		_, err = h.s.CreateUpstream(ctx(t), h.upstreamID(), json.RawMessage(`{"url":"a","url":"b"}`))
		wantField(t, err, "/config")
		_, err = h.s.UpdateUpstream(ctx(t), id, json.RawMessage(`{"n":1e131071}`), nil)
		wantField(t, err, "/config/n")
		equal(t, "upstream config after a refused update", string(must(h.s.GetUpstream(ctx(t), id))(t).Config), `{"url":"http://x","enabled":true}`)
	})

	t.Run("names with array and JSON syntax come back as given", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		odd := `a,"b"{c}\d'e f`
		got := must(h.s.PutMemory(ctx(t), tn, store.PutMemory{Namespace: odd, Key: odd, Value: json.RawMessage(`1`), Tags: []string{odd, "NULL", "é"}}))(t)
		equal(t, "tags", got.Tags, []string{"NULL", odd, "é"})
		got = must(h.s.GetMemory(ctx(t), tn, odd, odd))(t)
		equal(t, "namespace, key and tags read back", []string{got.Namespace, got.Key, strings.Join(got.Tags, "|")},
			[]string{odd, odd, "NULL|" + odd + "|é"})
	})

	t.Run("text fields and names with NUL are refused", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{Namespace: "n\x00s", Key: "k", Value: json.RawMessage(`1`)})
		wantField(t, err, "namespace")
		_, err = h.s.PutMemory(ctx(t), tn, store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`1`), Tags: []string{"t\x00"}})
		wantField(t, err, "tags[0]")
		_, err = h.s.RegisterAgent(ctx(t), tn, store.Agent{ID: "a", Description: "d\x00"})
		wantField(t, err, "description")
		_, err = h.s.RegisterAgent(ctx(t), tn, store.Agent{ID: "a", Description: "d", Capabilities: []string{"c\x00"}})
		wantField(t, err, "capabilities[0]")
		_, err = h.s.CreateSession(ctx(t), tn, store.NewSession{Task: "t\x00", Initiator: "i"})
		wantField(t, err, "task")
		s := must(h.s.CreateSession(ctx(t), tn, store.NewSession{Task: "t", Initiator: "i"}))(t)
		_, err = h.s.CompleteSession(ctx(t), tn, s.ID, "done\x00")
		wantField(t, err, "summary")
		_, err = h.s.FailSession(ctx(t), tn, s.ID, store.SessionError{Code: "E", Message: "m\x00"})
		wantField(t, err, "error.message")
		equal(t, "status after the refused changes", must(h.s.GetSession(ctx(t), tn, s.ID))(t).Status, store.SessionActive)
	})
}

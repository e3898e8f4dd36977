package statetools

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// TestEntryJSONMatchesMarshal: memory_retrieve's hand-written encoder
// writes what encoding/json writes for the entry, so clients see the same
// JSON whichever path answered.
func TestEntryJSONMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 4, 5, 123456000, time.UTC)
	whole := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		e    store.MemoryEntry
	}{
		{"plain", store.MemoryEntry{Namespace: "default", Key: "k", Value: json.RawMessage(`{"a":1}`), Tags: []string{}, Version: 1, CreatedAt: at, UpdatedAt: at}},
		{"tags and expiry", store.MemoryEntry{Namespace: "team", Key: "notes/1", Value: json.RawMessage(`"text"`), Tags: []string{"a", "b"}, Version: 7, CreatedAt: whole, UpdatedAt: at, ExpiresAt: &at}},
		{"escapes", store.MemoryEntry{Namespace: "ns\"<>&", Key: "k\u2028\t\\é", Value: json.RawMessage(`["<b>",null,true,1.5e3]`), Tags: []string{"x&y"}, Version: 2, CreatedAt: at, UpdatedAt: at}},
		{"nil tags and value", store.MemoryEntry{Namespace: "n", Key: "k", Version: 1, CreatedAt: at, UpdatedAt: at}},
		{"other zone", store.MemoryEntry{Namespace: "n", Key: "k", Value: json.RawMessage(`0`), Tags: []string{}, Version: 1, CreatedAt: at.In(time.FixedZone("x", 3600)), UpdatedAt: at}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			// encoding/json escapes <, > and & for HTML; the envelope does
			// not (it re-escapes every string canonically), so compare the
			// decoded values as well as validity.
			got := entryJSON{&tc.e}.AppendJSON(nil)
			if !json.Valid(got) {
				t.Fatalf("AppendJSON = %s: not valid JSON", got)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(w)
			if !bytes.Equal(gb, wb) {
				t.Fatalf("AppendJSON = %s\njson.Marshal = %s", got, want)
			}
			var noHTML bytes.Buffer
			enc := json.NewEncoder(&noHTML)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(tc.e); err != nil {
				t.Fatal(err)
			}
			if w := bytes.TrimSuffix(noHTML.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
				t.Fatalf("AppendJSON = %s\nencoding/json (no HTML escapes) = %s", got, w)
			}
		})
	}
}

// FuzzEntryJSON: for any strings and any valid value, AppendJSON writes
// valid JSON that decodes to the entry.
func FuzzEntryJSON(f *testing.F) {
	f.Add("default", "k", `{"a":[1,2]}`, "tag", int64(1), int64(1700000000123456))
	f.Add("\x00\xff", "\u2029", `"\u0000"`, "", int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, ns, key, value, tag string, version, micros int64) {
		if !json.Valid([]byte(value)) {
			return
		}
		at := time.UnixMicro(micros % 253402300799000000).UTC() // years 0001..9999
		if at.Year() < 1 {
			return
		}
		e := store.MemoryEntry{Namespace: ns, Key: key, Value: json.RawMessage(value), Tags: []string{tag}, Version: version, CreatedAt: at, UpdatedAt: at, ExpiresAt: &at}
		got := entryJSON{&e}.AppendJSON(nil)
		var back store.MemoryEntry
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendJSON = %q: %v", got, err)
		}
		want, _ := json.Marshal(e)
		var w store.MemoryEntry
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if back.Namespace != w.Namespace || back.Key != w.Key || back.Tags[0] != w.Tags[0] || back.Version != w.Version ||
			!back.CreatedAt.Equal(w.CreatedAt) || !back.ExpiresAt.Equal(*w.ExpiresAt) {
			t.Fatalf("AppendJSON decodes to %+v, json.Marshal to %+v", back, w)
		}
	})
}

// TestDecodeKey: the reflection-free argument reader agrees with
// json.Unmarshal on every argument shape the schema lets through.
func TestDecodeKey(t *testing.T) {
	for _, args := range []string{
		``,
		`{}`,
		`{"key":"k"}`,
		`{"namespace":"team","key":"notes/1"}`,
		`{ "key" : "a\"b\\c\u00e9\n" , "namespace":"n\/s" }`,
		`{"k\u0065y":"escaped name"}`,
		`{"key":"first","key":"last wins"}`,
		`{"key":"ünïcödé 😀"}`,
	} {
		t.Run(args, func(t *testing.T) {
			got, err := decodeKey(&handlers.ToolCall{Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatal(err)
			}
			var want memoryKeyArgs
			if args != "" {
				if err := json.Unmarshal([]byte(args), &want); err != nil {
					t.Fatal(err)
				}
			}
			if got != want {
				t.Fatalf("decodeKey = %+v, json.Unmarshal = %+v", got, want)
			}
		})
	}
}

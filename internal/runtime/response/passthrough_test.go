package response

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// A passed-on result keeps its blocks, structuredContent, isError and
// _meta as the other server sent them; only text blocks are cut, and a
// result over the size limit loses whole blocks, never a part of binary
// data or of structuredContent.
func TestPassThrough(t *testing.T) {
	lim := Limits{MaxResponseBytes: 4096, MaxListItems: 10, MaxStringLength: 100, TruncationSuffix: "…"}
	blob := strings.Repeat("QUJD", 500) // 2,000 characters of base64
	text := func(s string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"type": "text", "text": s, "annotations": map[string]any{"audience": []string{"user"}}})
		return b
	}
	image := json.RawMessage(`{"type":"image","data":"` + blob + `","mimeType":"image/png"}`)
	resource := json.RawMessage(`{"type":"resource","resource":{"uri":"file:///a.gz","mimeType":"application/gzip","blob":"` + blob + `"}}`)
	link := json.RawMessage(`{"type":"resource_link","uri":"file:///b","name":"b","size":12,"_meta":{"x":1}}`)
	cases := []struct {
		name       string
		in         Passed
		wantBlocks []json.RawMessage // nil: in.Content
		wantCut    bool
		dropped    int
		wantErr    string
	}{
		{name: "every block type as sent", in: Passed{Content: []json.RawMessage{text("hi"), image, link}, StructuredContent: json.RawMessage(`{"n":1}`), Meta: json.RawMessage(`{"up":true}`)}},
		{name: "isError as sent", in: Passed{Content: []json.RawMessage{text("no")}, IsError: true}},
		{name: "a long text block is cut with the suffix", in: Passed{Content: []json.RawMessage{text(strings.Repeat("é", 150))}},
			wantBlocks: []json.RawMessage{text(strings.Repeat("é", 99) + "…")}, wantCut: true},
		{name: "binary data is never cut", in: Passed{Content: []json.RawMessage{resource}}},
		{name: "over the size limit, whole blocks go from the end", in: Passed{Content: []json.RawMessage{text("keep"), image, resource}},
			wantBlocks: []json.RawMessage{text("keep"), image}, wantCut: true, dropped: 1},
		{name: "structuredContent too large to fit is an error", in: Passed{Content: []json.RawMessage{text("x")}, StructuredContent: json.RawMessage(`{"s":"` + strings.Repeat("s", 5000) + `"}`)},
			wantErr: "does not fit response.maxResponseBytes (4096)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := PassThrough(tc.in, Metadata{DurationMs: 7}, lim)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wire, err := protocol.AppendToolResult(nil, res)
			if err != nil {
				t.Fatal(err)
			}
			if len(wire) > lim.MaxResponseBytes {
				t.Errorf("%d bytes on the wire, over %d", len(wire), lim.MaxResponseBytes)
			}
			var got struct {
				Content           []json.RawMessage          `json:"content"`
				StructuredContent json.RawMessage            `json:"structuredContent"`
				IsError           bool                       `json:"isError"`
				Meta              map[string]json.RawMessage `json:"_meta"`
			}
			if err := json.Unmarshal(wire, &got); err != nil {
				t.Fatalf("%s: %v", wire, err)
			}
			want := tc.wantBlocks
			if want == nil {
				want = tc.in.Content
			}
			var ours passedMeta
			_ = json.Unmarshal(got.Meta[MetaKey], &ours)
			if tc.dropped > 0 {
				note := got.Content[len(got.Content)-1]
				got.Content = got.Content[:len(got.Content)-1]
				if !strings.Contains(string(note), "1 of the result's 3 content blocks were left out") {
					t.Errorf("note %s", note)
				}
			}
			if len(got.Content) != len(want) {
				t.Fatalf("%d blocks, want %d: %s", len(got.Content), len(want), wire)
			}
			for i := range want {
				if !jsonSame(got.Content[i], want[i]) {
					t.Errorf("block %d = %.200s, want %.200s", i, got.Content[i], want[i])
				}
			}
			if !jsonSame(got.StructuredContent, tc.in.StructuredContent) || got.IsError != tc.in.IsError {
				t.Errorf("structuredContent %s isError %v", got.StructuredContent, got.IsError)
			}
			if ours.DurationMs != 7 || ours.Attempts != 1 || ours.Truncated != tc.wantCut || ours.DroppedBlocks != tc.dropped {
				t.Errorf("_meta[%s] = %+v", MetaKey, ours)
			}
			if len(tc.in.Meta) > 0 && string(got.Meta["up"]) != "true" {
				t.Errorf("the server's own _meta was lost: %v", got.Meta)
			}
			for _, b := range got.Content {
				var tb struct{ Text string }
				_ = json.Unmarshal(b, &tb)
				if utf8.RuneCountInString(tb.Text) > lim.MaxStringLength && !strings.Contains(tb.Text, "content blocks were left out") {
					t.Errorf("a text of %d characters passed", utf8.RuneCountInString(tb.Text))
				}
			}
		})
	}
}

func jsonSame(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b) || string(a) == "null" || string(b) == "null"
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// The result's _meta keeps every member the server sent, whatever its
// name or value, and sets MetaKey (replacing a member of that name); an
// absent or null _meta gets MetaKey alone; anything but an object is
// refused.
func TestPassThroughMeta(t *testing.T) {
	lim := DefaultLimits()
	cases := []struct {
		name    string
		meta    string
		want    map[string]string // the server's members, compact
		wantErr string
	}{
		{name: "absent", meta: ``, want: map[string]string{}},
		{name: "null", meta: `null`, want: map[string]string{}},
		{name: "empty", meta: `{}`, want: map[string]string{}},
		{name: "members kept as sent", meta: ` { "progressToken" : "p-1", "com.example/x":{"a":[1, 2.50, 9007199254740993]}, "n":null }`,
			want: map[string]string{"progressToken": `"p-1"`, "com.example/x": `{"a":[1,2.50,9007199254740993]}`, "n": `null`}},
		{name: "escaped key", meta: `{"a\"b\u00e9":true}`, want: map[string]string{`a"bé`: `true`}},
		{name: "ours replaced", meta: `{"` + MetaKey + `":{"durationMs":99999},"k":1}`, want: map[string]string{"k": `1`}},
		{name: "not an object", meta: `[1]`, wantErr: "_meta is not a JSON object"},
		{name: "not JSON", meta: `{"a":}`, wantErr: "_meta is not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Passed{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"x"}`)}, Meta: json.RawMessage(tc.meta), Attempts: 2}
			res, err := PassThrough(in, Metadata{DurationMs: 5, Cached: true}, lim)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(res.Meta, &got); err != nil {
				t.Fatalf("_meta %s: %v", res.Meta, err)
			}
			var ours passedMeta
			if err := json.Unmarshal(got[MetaKey], &ours); err != nil {
				t.Fatalf("_meta[%s] = %s: %v", MetaKey, got[MetaKey], err)
			}
			if want := (passedMeta{DurationMs: 5, Cached: true, Attempts: 2}); ours != want {
				t.Errorf("_meta[%s] = %+v, want %+v", MetaKey, ours, want)
			}
			delete(got, MetaKey)
			if len(got) != len(tc.want) {
				t.Errorf("_meta = %s, want the server's members %v and ours", res.Meta, tc.want)
			}
			for k, v := range tc.want {
				var buf bytes.Buffer
				if err := json.Compact(&buf, got[k]); err != nil || buf.String() != v {
					t.Errorf("_meta[%q] = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

// appendPassedMeta writes passedMeta as encoding/json does, so that the
// hand-written encoder cannot drift from the struct's tags.
func TestAppendPassedMeta(t *testing.T) {
	for _, m := range []passedMeta{
		{},
		{DurationMs: 12, Cached: true, Truncated: true, Attempts: 3},
		{DurationMs: 1 << 40, Attempts: 1, DroppedBlocks: 2, OriginalBytes: 2 << 20},
		{DurationMs: 0, Attempts: 1, OriginalBytes: 7},
	} {
		var got map[string]json.RawMessage
		if err := json.Unmarshal(appendPassedMeta([]byte{'{'}, m), &got); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(m)
		if string(got[MetaKey]) != string(want) || len(got) != 1 {
			t.Errorf("appendPassedMeta(%+v) = %s, want {%q:%s}", m, appendPassedMeta([]byte{'{'}, m), MetaKey, want)
		}
	}
}

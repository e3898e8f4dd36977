package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A result the server wrote is kept as written (compacted), and anything
// that is not a tools/call result fails the call with a protocol error,
// whatever the spelling.
func TestDecodeCallResult(t *testing.T) {
	tests := []struct {
		name, raw string
		want      CallResult // compared as JSON
		wantErr   string
	}{
		{name: "text", raw: `{"content":[{"type":"text","text":"hi"}]}`,
			want: CallResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}}},
		{name: "spaced, every part", raw: " {\n \"content\" : [ { \"type\" : \"image\" , \"data\" : \"AA==\" } , {\"type\":\"text\",\"text\":\"a ] b\"} ] ,\n \"structuredContent\" : { \"n\" : 1 } , \"isError\" : true , \"_meta\" : { \"k\" : [ ] } } ",
			want: CallResult{Content: []json.RawMessage{json.RawMessage(`{"type":"image","data":"AA=="}`), json.RawMessage(`{"type":"text","text":"a ] b"}`)},
				StructuredContent: json.RawMessage(`{"n":1}`), IsError: true, Meta: json.RawMessage(`{"k":[]}`)}},
		{name: "no content", raw: `{}`, want: CallResult{Content: []json.RawMessage{}}},
		{name: "nulls", raw: `{"content":null,"structuredContent":null,"isError":null,"_meta":null}`, want: CallResult{Content: []json.RawMessage{}}},
		{name: "repeated member: the last wins", raw: `{"isError":true,"isError":false,"content":[]}`, want: CallResult{Content: []json.RawMessage{}}},
		{name: "names match exactly", raw: `{"Content":[1],"IsError":"x"}`, want: CallResult{Content: []json.RawMessage{}}},
		{name: "not an object", raw: `"done"`, wantErr: "not a tools/call result"},
		{name: "content not an array", raw: `{"content":{"type":"text"}}`, wantErr: "content is not an array"},
		{name: "content block not an object", raw: `{"content":["hi"]}`, wantErr: "content block 0 is not an object"},
		{name: "isError not a boolean", raw: `{"content":[],"isError":"yes"}`, wantErr: "isError is not a boolean"},
		{name: "invalid JSON", raw: `{"content":[}`, wantErr: "not valid MCP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeCallResult(json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Fatalf("got  %s\nwant %s", g, w)
			}
		})
	}
}

// A message's envelope: the method must be a string, an error member is
// decoded, and a relayed message's parts survive the reuse of the bytes
// they came from (callState.handle clones them).
func TestDecodeCallMessage(t *testing.T) {
	tests := []struct {
		name, raw, method, id, wantErr string
		errCode                        int64
	}{
		{name: "request", raw: `{"jsonrpc":"2.0","id":7,"method":"roots/list","params":{}}`, method: "roots/list", id: "7"},
		{name: "escaped method", raw: `{"method":"notifications\/progress"}`, method: "notifications/progress"},
		{name: "response error", raw: `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"bad"}}`, id: `"a"`, errCode: -32602},
		{name: "null error", raw: `{"id":"a","result":{},"error":null}`, id: `"a"`},
		{name: "method not a string", raw: `{"method":3}`, wantErr: "method is not a string"},
		{name: "not JSON", raw: `{"method":`, wantErr: "not valid JSON"},
		{name: "not an object", raw: `[1]`, wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := decodeCallMessage([]byte(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Method != tt.method || string(m.ID) != tt.id {
				t.Fatalf("method %q id %s, want %q %s", m.Method, m.ID, tt.method, tt.id)
			}
			if tt.errCode != 0 && (m.Error == nil || m.Error.Code != tt.errCode) {
				t.Fatalf("error = %+v, want code %d", m.Error, tt.errCode)
			}
			if tt.errCode == 0 && m.Error != nil {
				t.Fatalf("error = %+v, want none", m.Error)
			}
		})
	}
}

// FuzzDecodeCallResult: whatever a server sends, decoding never panics,
// and what it accepts is what encoding/json reads from the same bytes
// with the member names spelled exactly.
func FuzzDecodeCallResult(f *testing.F) {
	for _, s := range []string{`{"content":[{"type":"text","text":"x"}],"isError":false}`, `{}`, `{"content":[{}],"_meta":{"a":1},"structuredContent":[1]}`, `[]`, `{"content":"x"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := decodeCallResult(json.RawMessage(raw))
		if err != nil {
			return
		}
		lower := strings.ToLower(raw)
		if strings.Count(lower, "content") != strings.Count(raw, "content") || strings.Count(lower, "iserror") != strings.Count(raw, "isError") || strings.Contains(raw, `\`) {
			return // encoding/json also matches other spellings and escaped names
		}
		var ref struct {
			Content []json.RawMessage `json:"content"`
			IsError bool              `json:"isError"`
		}
		if json.Unmarshal([]byte(raw), &ref) != nil {
			t.Fatalf("accepted %q, which encoding/json refuses", raw)
		}
		if len(ref.Content) != len(got.Content) || ref.IsError != got.IsError {
			t.Fatalf("%q: %d blocks, isError %v; encoding/json reads %d, %v", raw, len(got.Content), got.IsError, len(ref.Content), ref.IsError)
		}
	})
}

// An answer's announced length reserves at most maxAnswerPrealloc before
// its bytes arrive: an upstream announcing 16 MiB and sending one byte
// would otherwise make the gateway hold 16 MiB per call.
func TestReadAnswerReservesWhatArrives(t *testing.T) {
	for _, tt := range []struct {
		announced int64
		body      string
	}{
		{16 << 20, "x"},
		{2, "{}"},
		{-1, `{"a":1}`},
	} {
		resp := &http.Response{ContentLength: tt.announced, Body: io.NopCloser(strings.NewReader(tt.body))}
		got, err := readAnswer(resp)
		if err != nil || string(got) != tt.body {
			t.Fatalf("readAnswer = %q, %v", got, err)
		}
		if cap(got) > 2*maxAnswerPrealloc { // Grow rounds up to a size class
			t.Errorf("announced %d, sent %d bytes: %d reserved", tt.announced, len(tt.body), cap(got))
		}
	}
}

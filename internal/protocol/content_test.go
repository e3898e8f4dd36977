package protocol_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func marshalMembers(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %+v: %v", v, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return m
}

func TestContentMarshalJSON(t *testing.T) {
	prio := 0.5
	tests := []struct {
		name    string
		content protocol.Content
		want    map[string]string // member -> raw JSON; exactly these members
	}{
		{"text", protocol.TextContent("hi"), map[string]string{"type": `"text"`, "text": `"hi"`}},
		{"empty text", protocol.TextContent(""), map[string]string{"type": `"text"`, "text": `""`}},
		{"text drops other members", protocol.Content{Type: "text", Text: "x", Data: "AAAA", URI: "u://x"},
			map[string]string{"type": `"text"`, "text": `"x"`}},
		{"text annotations", protocol.Content{Type: "text", Annotations: &protocol.Annotations{Audience: []string{"user"}, Priority: &prio}},
			map[string]string{"type": `"text"`, "text": `""`, "annotations": `{"audience":["user"],"priority":0.5}`}},
		{"image", protocol.ImageContent("iVBORw0KGgo=", "image/png"),
			map[string]string{"type": `"image"`, "data": `"iVBORw0KGgo="`, "mimeType": `"image/png"`}},
		{"image empty", protocol.ImageContent("", ""),
			map[string]string{"type": `"image"`, "data": `""`, "mimeType": `""`}},
		{"audio", protocol.AudioContent("UklGRg==", "audio/wav"),
			map[string]string{"type": `"audio"`, "data": `"UklGRg=="`, "mimeType": `"audio/wav"`}},
		{"resource text", protocol.EmbeddedResource(protocol.ResourceContents{URI: "file:///a.txt", MimeType: "text/plain", Text: "body"}),
			map[string]string{"type": `"resource"`, "resource": `{"uri":"file:///a.txt","mimeType":"text/plain","text":"body"}`}},
		{"resource empty text", protocol.EmbeddedResource(protocol.ResourceContents{URI: "file:///e"}),
			map[string]string{"type": `"resource"`, "resource": `{"uri":"file:///e","text":""}`}},
		{"resource blob", protocol.EmbeddedResource(protocol.ResourceContents{URI: "file:///b", Blob: "AAEC", IsBlob: true}),
			map[string]string{"type": `"resource"`, "resource": `{"uri":"file:///b","blob":"AAEC"}`}},
		{"resource_link", protocol.Content{Type: protocol.ContentResourceLink, URI: "file:///l", Name: "l"},
			map[string]string{"type": `"resource_link"`, "uri": `"file:///l"`, "name": `"l"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := marshalMembers(t, tc.content)
			if len(got) != len(tc.want) {
				t.Errorf("members = %v, want %v", keys(got), keys(tc.want))
			}
			for k, want := range tc.want {
				if string(got[k]) != want {
					t.Errorf("%s = %s, want %s", k, got[k], want)
				}
			}
			// Through a pointer and inside a slice too (how results carry it).
			inSlice := marshalMembers(t, struct {
				C []protocol.Content `json:"c"`
			}{[]protocol.Content{tc.content}})
			var arr []map[string]json.RawMessage
			if err := json.Unmarshal(inSlice["c"], &arr); err != nil || len(arr) != 1 || !reflect.DeepEqual(arr[0], got) {
				t.Errorf("in a slice: %s", inSlice["c"])
			}
		})
	}
}

func keys(m any) []string {
	var out []string
	for _, k := range reflect.ValueOf(m).MapKeys() {
		out = append(out, k.String())
	}
	return out
}

func TestResourceContentsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   protocol.ResourceContents
		json string
	}{
		{"text", protocol.ResourceContents{URI: "memory://ns/k", MimeType: "application/json", Text: `{"a":1}`}, `{"uri":"memory://ns/k","mimeType":"application/json","text":"{\"a\":1}"}`},
		{"empty text", protocol.ResourceContents{URI: "x://e"}, `{"uri":"x://e","text":""}`},
		{"blob", protocol.ResourceContents{URI: "x://b", MimeType: "image/png", Blob: "iVBORw0KGgo=", IsBlob: true}, `{"uri":"x://b","mimeType":"image/png","blob":"iVBORw0KGgo="}`},
		{"empty blob", protocol.ResourceContents{URI: "x://b0", IsBlob: true}, `{"uri":"x://b0","blob":""}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Errorf("marshal = %s, want %s", b, tc.json)
			}
			var out protocol.ResourceContents
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if out != tc.in {
				t.Errorf("round trip = %+v, want %+v", out, tc.in)
			}
			// Embedded in a content block as well.
			c := protocol.EmbeddedResource(tc.in)
			cb, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var back protocol.Content
			if err := json.Unmarshal(cb, &back); err != nil {
				t.Fatal(err)
			}
			if back.Type != protocol.ContentResource || back.Resource == nil || *back.Resource != tc.in {
				t.Errorf("content round trip = %+v (%s)", back, cb)
			}
		})
	}
	var bad protocol.ResourceContents
	if err := json.Unmarshal([]byte(`{"uri":5}`), &bad); err == nil {
		t.Error(`{"uri":5}: want an error`)
	}
}

func TestToolErrorResult(t *testing.T) {
	r := protocol.ToolError("boom")
	if !r.IsError || len(r.Content) != 1 || r.Content[0].Type != protocol.ContentText || r.Content[0].Text != "boom" {
		t.Fatalf("ToolError = %+v", r)
	}
	m := marshalMembers(t, r)
	if string(m["isError"]) != "true" {
		t.Errorf("isError = %s", m["isError"])
	}
	if _, ok := m["structuredContent"]; ok {
		t.Errorf("structuredContent present without a value")
	}
}

package protocol

import (
	"encoding/json"
	"testing"
)

// An item with Raw is sent as Raw, members this package does not model
// included; one without is encoded from its fields.
func TestRelayedItemsMarshalRaw(t *testing.T) {
	raw := json.RawMessage(`{"uri":"file:///a","name":"a","_meta":{"x":1},"icons":[{"src":"https://i"}]}`)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"resource raw", Resource{URI: "file:///a", Name: "a", Raw: raw}, string(raw)},
		{"resource plain", Resource{URI: "file:///a", Name: "a"}, `{"uri":"file:///a","name":"a"}`},
		{"template raw", ResourceTemplate{URITemplate: "file:///{p}", Raw: raw}, string(raw)},
		{"template plain", ResourceTemplate{URITemplate: "file:///{p}", Name: "t"}, `{"uriTemplate":"file:///{p}","name":"t"}`},
		{"prompt raw", Prompt{Name: "s_p", Raw: json.RawMessage(`{"name":"s_p","icons":[]}`)}, `{"name":"s_p","icons":[]}`},
		{"prompt plain", Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a", Required: true}}}, `{"name":"p","arguments":[{"name":"a","required":true}]}`},
		{"in a list", ListResourcesResult{Resources: []Resource{{URI: "x://1", Name: "1"}, {Raw: raw}}}, `{"resources":[{"uri":"x://1","name":"1"},` + string(raw) + `]}`},
	} {
		got, err := Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

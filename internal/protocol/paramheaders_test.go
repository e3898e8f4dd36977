package protocol_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func TestParamHeaders(t *testing.T) {
	tests := []struct {
		name, schema, want, wantErr string
	}{
		{"the specification's example", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}`, "Region=region:string", ""},
		{"nested through properties", `{"type":"object","properties":{"target":{"type":"object","properties":{"shard":{"type":"integer","x-mcp-header":"Shard"},"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}}}}`, "Dry-Run=target.dry:boolean Shard=target.shard:integer", ""},
		{"none", `{"type":"object"}`, "", ""},
		{"data is not a schema", `{"type":"object","properties":{"a":{"type":"object","default":{"x-mcp-header":"X"},"const":{"properties":{"b":{"x-mcp-header":"Y"}}}}}}`, "", ""},
		{"through items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, "", "not on a property reached through properties keys alone"},
		{"through oneOf", `{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "", "not on a property reached"},
		{"through $defs", `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"A"}}}`, "", "not on a property reached"},
		{"on the root", `{"type":"object","x-mcp-header":"A"}`, "", "not on a property reached"},
		{"a number", `{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, "", "not string, integer or boolean"},
		{"no type", `{"type":"object","properties":{"a":{"x-mcp-header":"A"}}}`, "", "not string, integer or boolean"},
		{"not a token", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Re gion"}}}`, "", "header name token"},
		{"CR LF", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A\r\nX-Evil: 1"}}}`, "", "header name token"},
		{"empty", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, "", "header name token"},
		{"repeated in another case", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"REGION"}}}`, "", "repeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := protocol.ParamHeaders(json.RawMessage(tt.schema))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, h := range got {
				s = append(s, h.Name+"="+strings.Join(h.Path, ".")+":"+h.Type)
			}
			if strings.Join(s, " ") != tt.want {
				t.Fatalf("got %q, want %q", strings.Join(s, " "), tt.want)
			}
		})
	}
}

func TestCheckParamHeaders(t *testing.T) {
	specs, err := protocol.ParamHeaders(json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"opts":{"type":"object","properties":{"shard":{"type":"integer","x-mcp-header":"Shard"},"dry":{"type":"boolean","x-mcp-header":"Dry"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		header     []string
		ok         bool
	}{
		{"all match", `{"region":"us-west1","opts":{"shard":42,"dry":false}}`, []string{"Mcp-Param-Region", "us-west1", "Mcp-Param-Shard", "42", "Mcp-Param-Dry", "false"}, true},
		{"integers compare as numbers", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "42.0"}, true},
		{"Base64", `{"region":"Hello, 世界"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="}, true},
		{"header names are case-insensitive", `{"region":"eu"}`, []string{"mcp-param-region", "eu"}, true},
		{"absent and null need no header", `{"region":null}`, nil, true},
		{"argument without its header", `{"region":"eu"}`, nil, false},
		{"header without its argument", `{}`, []string{"Mcp-Param-Region", "eu"}, false},
		{"different value", `{"region":"eu"}`, []string{"Mcp-Param-Region", "us"}, false},
		{"different integer", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "43"}, false},
		{"boolean spelled otherwise", `{"opts":{"dry":true}}`, []string{"Mcp-Param-Dry", "True"}, false},
		{"a character a header may not hold", `{"region":"é"}`, []string{"Mcp-Param-Region", "é"}, false},
		{"negative integers", `{"opts":{"shard":-7}}`, []string{"Mcp-Param-Shard", "-7"}, true},
		{"a plus sign", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "+42"}, false},
		{"a leading zero", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "042"}, false},
		{"an exponent", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "4.2e1"}, false},
		{"hexadecimal", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "0x2Ap0"}, false},
		{"a fraction that is not zero", `{"opts":{"shard":42}}`, []string{"Mcp-Param-Shard", "42.5"}, false},
		{"the argument under a second spelling", `{"region":"us","Region":"eu"}`, []string{"Mcp-Param-Region", "us"}, false},
		{"an object on the path under a second spelling", `{"opts":{"shard":1},"OPTS":{"shard":2}}`, []string{"Mcp-Param-Shard", "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tt.header); i += 2 {
				h.Add(tt.header[i], tt.header[i+1])
			}
			err := protocol.CheckParamHeaders(specs, json.RawMessage(tt.args), h)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %+v, want ok %v", err, tt.ok)
			}
			if err != nil && (err.Status != http.StatusBadRequest || err.Code != protocol.CodeHeaderMismatch) {
				t.Fatalf("err = %d %d, want 400/-32020", err.Status, err.Code)
			}
		})
	}
	h := http.Header{}
	h.Add("Mcp-Param-Region", "eu")
	h.Add("Mcp-Param-Region", "eu")
	if protocol.CheckParamHeaders(specs, json.RawMessage(`{"region":"eu"}`), h) == nil {
		t.Fatal("a repeated header was taken")
	}
}

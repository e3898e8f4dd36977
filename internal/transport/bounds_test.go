package transport

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// initialize's clientInfo and capabilities are kept for the session's
// life: over a bound in bytes or depth, initialize is -32602 naming the
// member and the limit, and no session is made; at the bound it passes.
func TestInitialize_ParamsBounded(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) {
		o.MaxClientInfoBytes, o.MaxCapabilitiesBytes, o.MaxInitializeDepth = 100, 200, 4
	}))
	info := func(nameLen int) map[string]any {
		return map[string]any{"name": strings.Repeat("n", nameLen), "version": "1"}
	}
	nest := func(levels int) any { // levels objects deep
		var v any = map[string]any{}
		for range levels - 1 {
			v = map[string]any{"x": v}
		}
		return v
	}
	const infoOverhead = len(`{"name":"","version":"1"}`)
	cases := []struct {
		name       string
		clientInfo any
		caps       any
		want       string // "" when accepted
	}{
		{"clientInfo at the limit", info(100 - infoOverhead), map[string]any{}, ""},
		{"clientInfo over the limit", info(101 - infoOverhead), map[string]any{}, "params.clientInfo is 101 bytes, over the limit of 100 (transport.maxClientInfoBytes)"},
		{"capabilities over the limit", info(1), map[string]any{"experimental": strings.Repeat("c", 200)}, "params.capabilities is 219 bytes, over the limit of 200 (transport.maxCapabilitiesBytes)"},
		{"capabilities at the depth limit", info(1), nest(4), ""},
		{"capabilities too deep", info(1), nest(5), "params.capabilities nests 5 levels deep, over the limit of 4 (transport.maxInitializeDepth)"},
		{"brackets in strings do not count", info(1), map[string]any{"x": map[string]any{"y": `[[[[{{{{"\`}}, ""},
		{"clientInfo too deep", map[string]any{"name": "n", "version": "1", "icons": []any{map[string]any{"sizes": []any{[]any{}}}}}, map[string]any{},
			"params.clientInfo nests 5 levels deep, over the limit of 4 (transport.maxInitializeDepth)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.tr.Sessions().Len()
			r := h.Post(t, "", th.RPC(1, "initialize", map[string]any{"protocolVersion": protocol.LatestVersion, "capabilities": tc.caps, "clientInfo": tc.clientInfo}))
			if tc.want == "" {
				if r.Status != http.StatusOK || r.Header.Get("Mcp-Session-Id") == "" {
					t.Fatalf("initialize: %s, want a session", r)
				}
				return
			}
			if msg := th.WantRPCError(t, r, http.StatusOK, "1", protocol.CodeInvalidParams); !strings.Contains(msg, tc.want) {
				t.Errorf("message %q, want it to say %q", msg, tc.want)
			}
			if r.Header.Get("Mcp-Session-Id") != "" || h.tr.Sessions().Len() != before {
				t.Errorf("a refused initialize made a client session")
			}
		})
	}
}

// The bound holds for what the decoder keeps: a member spelled in another
// case, or repeated, decodes into the same field (encoding/json matches
// names case-insensitively), so it counts towards the same limit.
func TestInitialize_BoundsHoldAsDecoded(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) {
		o.MaxClientInfoBytes, o.MaxCapabilitiesBytes, o.MaxInitializeDepth = 100, 200, 4
	}))
	big := `{"name":"` + strings.Repeat("n", 150) + `","version":"1"}`
	small := `{"name":"c","version":"1"}`
	cases := []struct{ name, params, want string }{
		{"another case", `"capabilities":{},"clientInfo":` + small + `,"CLIENTINFO":` + big, "params.clientInfo is 201 bytes"},
		{"repeated", `"capabilities":{},"clientInfo":` + small + `,"clientInfo":` + small + `,"clientInfo":` + small + `,"clientInfo":` + small, "params.clientInfo is 104 bytes"},
		{"escaped name", `"capabilities":{},"clientInfo":` + small + `,"client\u0049nfo":` + big, "params.clientInfo is 201 bytes"},
		{"capabilities in another case, too deep", `"clientInfo":` + small + `,"Capabilities":{"a":{"b":{"c":{"d":{}}}}}`, "params.capabilities nests 5 levels deep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.tr.Sessions().Len()
			body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocol.LatestVersion + `",` + tc.params + `}}`
			r := h.Post(t, "", []byte(body))
			if msg := th.WantRPCError(t, r, http.StatusOK, "1", protocol.CodeInvalidParams); !strings.Contains(msg, tc.want) {
				t.Errorf("message %q, want it to say %q", msg, tc.want)
			}
			if h.tr.Sessions().Len() != before {
				t.Errorf("a refused initialize made a client session")
			}
		})
	}
}

package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// A modern call answered early (the runtime does, for a call over its
// timeout) gets its whole answer to the client while its handler still
// holds the request's goroutine, as a legacy one does
// (INV-MCP-TIMEOUT-001): a client reading the body to its end must not
// wait for a handler that ignores ctx.
func TestModernAnswerEarlyWhileHandlerRuns(t *testing.T) {
	release := make(chan struct{})
	tool := handlers.Tool{Name: "early", Description: "answers early, then blocks ignoring ctx",
		Handler: func(_ context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			if !call.AnswerEarly(handlers.TextResult("early")) {
				t.Error("first early answer refused")
			}
			<-release
			return handlers.TextResult("late"), nil
		}}
	h := newHarness(t, func(c *harnessConfig) { c.Tools = []handlers.Tool{tool} })
	// The handlers stay blocked until the test ends, before the harness
	// closes (cleanups run last registered first).
	t.Cleanup(func() { close(release) })
	for _, accept := range []string{"application/json", th.AcceptBoth} {
		t.Run(accept, func(t *testing.T) {
			body := modernBody(5, "tools/call", map[string]any{"name": "early", "arguments": map[string]any{}}, nil)
			pending := h.PostAsync(t, context.Background(), "", body, append(modernHeaders("tools/call", "early"), "Accept", accept)...)
			r := th.WaitReply(t, pending) // arrives while the handler is blocked
			if r.Status != http.StatusOK {
				t.Fatalf("reply %s", r)
			}
			if text, _ := th.ToolText(t, th.ResultOf(t, r, "5")); text != "early" {
				t.Fatalf("got %q, want the early answer", text)
			}
		})
	}
}

// A modern client that sends a request and never reads its (large)
// answer must not hold the handler and its connection beyond
// WriteTimeout, as a legacy one may not.
func TestModernJSONClientThatStopsReadingIsDropped(t *testing.T) {
	var logs th.LockedBuffer
	h := newHarness(t, withOpts(func(o *Options) {
		o.WriteTimeout = 200 * time.Millisecond
		o.Logger = zerolog.New(&logs).Level(zerolog.InfoLevel)
	}))
	// An answer larger than the loopback socket buffers can take.
	body := modernBody(1, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 8 << 20}}, nil)
	c, err := net.Dial("tcp", h.TS.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\n"+
		"Mcp-Protocol-Version: %s\r\nMcp-Method: tools/call\r\nMcp-Name: big\r\nContent-Length: %d\r\n\r\n%s",
		protocol.Version20260728, len(body), body); err != nil {
		t.Fatal(err)
	}
	// The request's log line is written when its handler returns.
	testutil.Eventually(t, th.WaitLong, "the handler of a client that stopped reading to return", func() bool {
		return strings.Contains(logs.String(), `"method":"tools/call"`)
	})
}

// A tool that mirrors an argument into a header (x-mcp-header) has its
// headers checked whichever name the call gives it: exposed, canonical or
// bare (an upstream tool's own name, INV-MCP-ECO-003). A call by its bare
// name must not skip the check (basic/transports/streamable-http, "Custom
// Headers from Tool Parameters").
func TestModernParamHeadersEveryName(t *testing.T) {
	route := handlers.Tool{
		Name: "srv.route", Description: "Answers with its region.", Group: "upstream", BareName: "route",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`),
		Handler: func(_ context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			return handlers.TextResult("routed " + string(call.Arguments)), nil
		},
	}
	h := newHarness(t, func(c *harnessConfig) { c.Tools = []handlers.Tool{route} })
	cases := []struct {
		name, tool string
		header     []string
		status     int
	}{
		{"exposed name, header matches", "srv_route", []string{"Mcp-Param-Region", "eu-west"}, http.StatusOK},
		{"exposed name, header differs", "srv_route", []string{"Mcp-Param-Region", "us-east"}, http.StatusBadRequest},
		{"canonical name, header missing", "srv.route", nil, http.StatusBadRequest},
		{"bare name, header matches", "route", []string{"Mcp-Param-Region", "eu-west"}, http.StatusOK},
		{"bare name, header differs", "route", []string{"Mcp-Param-Region", "us-east"}, http.StatusBadRequest},
		{"bare name, header missing", "route", nil, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"name": tc.tool, "arguments": map[string]any{"region": "eu-west"}}
			r := h.Post(t, "", modernBody(1, "tools/call", params, nil), append(modernHeaders("tools/call", tc.tool), tc.header...)...)
			if tc.status == http.StatusOK {
				if text, _ := th.ToolText(t, th.ResultOf(t, r, "1")); !strings.HasPrefix(text, "routed") {
					t.Fatalf("%s", r)
				}
				return
			}
			th.WantRPCError(t, r, tc.status, "1", protocol.CodeHeaderMismatch)
		})
	}
}

// The codes the modern era gives its transport (-32020 header mismatch,
// -32021 missing client capability, -32022 unsupported version) say
// something of the client's request, and -32042 is one a modern server
// must not send (schema/2026-07-28; basic/versioning): one that a method
// served answers with — an upstream's error passed on, or a handler's
// own — is not sent as it is to a modern client, which would correct its
// headers, capabilities or version, or wait for a URL elicitation, for
// another server's reason. The legacy era passes it on unchanged.
func TestModernReservedCodesFromAHandler(t *testing.T) {
	h := newHarness(t)
	for _, code := range []int{protocol.CodeHeaderMismatch, protocol.CodeMissingClientCapability, protocol.CodeUnsupportedProtocolVersion, protocol.CodeURLElicitation} {
		uri := fmt.Sprintf("test://fails/%d", -code)
		err := h.Server.AddResource(handlers.Resource{
			Resource: protocol.Resource{URI: uri, Name: fmt.Sprintf("fails-%d", -code)},
			Read: func(context.Context, handlers.Session) ([]protocol.ResourceContents, error) {
				return nil, protocol.Errorf(code, "the upstream answered %d", code)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sid := h.Initialize(t)
	cases := []struct {
		name string
		code int
	}{
		{"header mismatch", protocol.CodeHeaderMismatch},
		{"missing client capability", protocol.CodeMissingClientCapability},
		{"unsupported protocol version", protocol.CodeUnsupportedProtocolVersion},
		{"URL elicitation required", protocol.CodeURLElicitation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uri := fmt.Sprintf("test://fails/%d", -tc.code)
			r := h.Post(t, "", modernBody(1, "resources/read", map[string]any{"uri": uri}, nil), modernHeaders("resources/read", uri)...)
			th.WantRPCError(t, r, http.StatusOK, "1", protocol.CodeInternalError)
			legacy := h.Post(t, sid, th.RPC(1, "resources/read", map[string]any{"uri": uri}))
			th.WantRPCError(t, legacy, http.StatusOK, "1", tc.code)
		})
	}
}

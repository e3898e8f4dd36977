package handlers

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Prepare reads a request once: LongRunning answers from it, and Run
// returns what the request log records instead of writing it into the
// request.
func TestPrepareAndRun(t *testing.T) {
	long := echoTool("job.start")
	long.LongRunning = true
	e := newEnv(t, echoTool("a.one"), long, simpleTool("a.fail", protocol.ToolError("boom"), nil))
	for _, tt := range []struct {
		name, method, params string
		longRunning          bool
		out                  Outcome
		protocolError        bool
	}{
		{"long-running tool", protocol.MethodToolsCall, `{"name":"job_start","arguments":{"text":"x"}}`, true, Outcome{Tool: "job.start"}, false},
		{"ordinary tool", protocol.MethodToolsCall, `{"name":"a.one","arguments":{"text":"x"}}`, false, Outcome{Tool: "a.one"}, false},
		{"failing tool", protocol.MethodToolsCall, `{"name":"a_fail"}`, false, Outcome{Tool: "a.fail", ToolError: true}, false},
		{"unknown tool", protocol.MethodToolsCall, `{"name":"nope"}`, false, Outcome{}, true},
		{"bad params", protocol.MethodToolsCall, `{"name":3}`, false, Outcome{}, true},
		{"not a call", protocol.MethodPing, ``, false, Outcome{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := &Request{Method: tt.method, ID: protocol.IntID(1), Params: json.RawMessage(tt.params), Session: e.sess, Peer: e.peer}
			p := e.s.Prepare(req)
			if p.LongRunning() != tt.longRunning {
				t.Errorf("LongRunning %v, want %v", p.LongRunning(), tt.longRunning)
			}
			_, out, err := e.s.Run(context.Background(), req, &p)
			if (err != nil) != tt.protocolError {
				t.Errorf("error %v, want one: %v", err, tt.protocolError)
			}
			if out != tt.out {
				t.Errorf("outcome %+v, want %+v", out, tt.out)
			}
		})
	}
}

// A tools/call's Mcp-Param-* headers are checked against the tool the
// call runs, whichever of its names the call gives: exposed, canonical
// or bare (INV-MCP-ECO-003). Prepare resolves the name once, so a group
// swapped between Prepare and Run cannot make the call run another tool
// than the one whose headers were checked.
func TestPrepareParamHeadersEveryName(t *testing.T) {
	routed := func(server, header string) Tool {
		tool := upstreamTool(server, "route")
		tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"` + header + `"}}}`)
		return tool
	}
	for _, tt := range []struct {
		name, call string
		want       string // the x-mcp-header found; "" for none
	}{
		{"exposed name", "a_route", "Region"},
		{"canonical name", "a.route", "Region"},
		{"bare name", "route", "Region"},
		{"unknown name", "nope", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if _, errs := e.s.Tools().ReplaceGroup("upstream", []Tool{routed("a", "Region")}); errs != nil {
				t.Fatal(errs)
			}
			req := &Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1), Session: e.sess, Peer: e.peer,
				Params: json.RawMessage(`{"name":"` + tt.call + `","arguments":{"region":"eu"}}`)}
			p := e.s.Prepare(req)
			specs, args := p.ParamHeaders()
			if got := ""; len(specs) > 0 {
				got = specs[0].Name
				if got != tt.want || string(args) != `{"region":"eu"}` {
					t.Fatalf("ParamHeaders = %+v %s, want %q", specs, args, tt.want)
				}
			} else if tt.want != "" {
				t.Fatalf("ParamHeaders found none, want %q", tt.want)
			}
			if tt.want == "" {
				return
			}
			// Another server's tool of the same bare name replaces it
			// between Prepare and Run: the call runs what was checked.
			if _, errs := e.s.Tools().ReplaceGroup("upstream", []Tool{routed("b", "Zone")}); errs != nil {
				t.Fatal(errs)
			}
			_, out, err := e.s.Run(context.Background(), req, &p)
			if err != nil || out.Tool != "a.route" {
				t.Fatalf("ran %q (err %v), want the prepared a.route", out.Tool, err)
			}
		})
	}
}

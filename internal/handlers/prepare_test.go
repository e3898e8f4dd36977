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

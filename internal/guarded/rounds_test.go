package guarded

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// eraSession is a client that declared elicitation, in era version.
type eraSession struct {
	session
	version string
}

func (s eraSession) ProtocolVersion() string { return s.version }
func (eraSession) ClientCapabilities() protocol.ClientCapabilities {
	return protocol.ClientCapabilities{Elicitation: json.RawMessage(`{}`)}
}

// answeringPeer answers every request of the server with result.
type answeringPeer struct {
	peer
	asked *atomic.Int64
}

func (p answeringPeer) Request(context.Context, string, any) (json.RawMessage, error) {
	p.asked.Add(1)
	return json.RawMessage(`{"action":"accept"}`), nil
}

// A guarded tool that asks the client for input (handlers.NeedInput) has
// the guardrails pass its round through, not turn it into a failed
// envelope: a modern client gets the InputRequiredResult, a legacy one
// is asked and the tool answers; the trace records the run that
// answered, once (docs/adr/0055-multi-round-trip-requests.md).
func TestRoundsPassTheGuardrails(t *testing.T) {
	confirm := Tool{Name: "test.confirm", Description: "asks first", Category: timeout.Mutation,
		Run: func(ctx context.Context, _ *handlers.ToolCall) (any, error) {
			if r, ok := handlers.InputOf(ctx).Responses["ok"]; ok {
				return json.RawMessage(r), nil
			}
			return nil, &handlers.NeedInput{Requests: map[string]protocol.InputRequest{
				"ok": {Method: protocol.MethodElicitationCreate, Params: json.RawMessage(`{"message":"sure?","requestedSchema":{"type":"object"}}`)}}}
		}}
	for _, tc := range []struct {
		era     string
		records int
	}{{protocol.Version20260728, 0}, {protocol.Version20251125, 1}} {
		t.Run(tc.era, func(t *testing.T) {
			cfg := defaultConfig()
			var records atomic.Int64
			cfg.Record = func(pipeline.CallRecord) { records.Add(1) }
			e := newEnv(t, cfg, nil, confirm)
			var asked atomic.Int64
			res, err := e.srv.Handle(context.Background(), &handlers.Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1),
				Params: json.RawMessage(`{"name":"test_confirm","arguments":{}}`), Session: eraSession{version: tc.era}, Peer: answeringPeer{asked: &asked}})
			if err != nil {
				t.Fatal(err)
			}
			switch r := res.(type) {
			case *protocol.InputRequiredResult:
				if tc.era != protocol.Version20260728 || r.InputRequests["ok"].Method != protocol.MethodElicitationCreate {
					t.Fatalf("%s: %+v", tc.era, r)
				}
			case *protocol.CallToolResult:
				var env envelope
				if err := json.Unmarshal(r.StructuredContent, &env); err != nil || !env.Success || string(env.Data) != `{"action":"accept"}` || asked.Load() != 1 {
					t.Fatalf("%s: %s (asked %d)", tc.era, r.StructuredContent, asked.Load())
				}
			default:
				t.Fatalf("%s: %T", tc.era, res)
			}
			if got := records.Load(); got != int64(tc.records) {
				t.Errorf("%s: %d calls recorded, want %d", tc.era, got, tc.records)
			}
		})
	}
}

package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// call is a Call without the MCP layer: the pipeline reads nothing else.
type call struct {
	name, session string
	args          json.RawMessage
}

func (c *call) ToolName() string                          { return c.name }
func (c *call) RawArguments() json.RawMessage             { return c.args }
func (c *call) ClientSessionID() string                   { return c.session }
func (c *call) AnswerEarly(*protocol.CallToolResult) bool { return false }

// The guarded functions run on any Call: the limits reject before Run,
// Run's data comes back in the envelope, and every outcome is recorded
// with what the Call says of itself. The end-to-end behaviour through
// the MCP server is tested in package guarded.
func TestWrapOverAnyCall(t *testing.T) {
	var recs []CallRecord
	cfg := Config{Limits: limits.DefaultConfig(), Timeouts: timeout.DefaultConfig(), Response: response.DefaultLimits(), Separator: "_",
		Record: func(r CallRecord) { recs = append(recs, r) }}
	p, err := New[*call](cfg, guard.NewPolicy(zerolog.Nop(), 0, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var ran int
	g, err := p.Wrap(Tool[*call]{Name: "test.echo", Category: timeout.Query,
		Run: func(_ context.Context, c *call) (any, error) { ran++; return c.args, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if string(g.Output) != string(response.EnvelopeSchema()) {
		t.Errorf("output schema %s, want the envelope's", g.Output)
	}
	tests := []struct {
		name, args, code string
		rejected         bool
	}{
		{"success", `{"text":"hi"}`, "", false},
		{"over the limits", `{"items":[` + strings.TrimSuffix(strings.Repeat("1,", 101), ",") + `]}`, string(response.CodeArrayTooLarge), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, ran = nil, 0
			c := &call{name: "test.echo", session: "s1", args: json.RawMessage(tt.args)}
			res := g.Precheck(context.Background(), c)
			if (res != nil) != tt.rejected {
				t.Fatalf("precheck result %v, want rejected %v", res, tt.rejected)
			}
			if res == nil {
				if res, err = g.Handler(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			if ran != map[bool]int{false: 1, true: 0}[tt.rejected] {
				t.Errorf("Run ran %d times", ran)
			}
			if res.IsError != tt.rejected || !strings.Contains(string(res.StructuredContent), tt.code) {
				t.Errorf("result %s, want code %q", res.StructuredContent, tt.code)
			}
			if len(recs) != 1 || recs[0].Tool != "test.echo" || recs[0].ClientSession != "s1" ||
				string(recs[0].ErrorCode) != tt.code || recs[0].ArgBytes != len(tt.args) {
				t.Errorf("records %+v", recs)
			}
		})
	}
}

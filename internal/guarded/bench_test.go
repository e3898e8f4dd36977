package guarded

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// The guardrails' added cost per tools/call is the difference between
// these two: the same echo tool, bare and through the pipeline (limits
// walk, gates, timeout goroutine, envelope). Dispatch, schema validation
// and the handler itself are in both.
func benchCall(b *testing.B, guarded bool) {
	reg, _ := handlers.NewToolRegistry("_")
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	run := func(_ context.Context, c *handlers.ToolCall) (any, error) {
		var a struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c.Arguments, &a); err != nil {
			return nil, err
		}
		return a, nil
	}
	if guarded {
		p, err := New(defaultConfig(), guard.NewPolicy(zerolog.Nop(), 10<<20, func() guard.Pressure { return guard.PressureLow }), zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		if err := Register(reg, p, Tool{Name: "bench.echo", Description: "echo", InputSchema: schema, Category: timeout.Query, Run: run}); err != nil {
			b.Fatal(err)
		}
	} else {
		err := reg.Add(handlers.Tool{Name: "bench.echo", Description: "echo", InputSchema: schema,
			Handler: func(ctx context.Context, c *handlers.ToolCall) (*protocol.CallToolResult, error) {
				a, err := run(ctx, c)
				if err != nil {
					return nil, err
				}
				body, err := json.Marshal(a)
				if err != nil {
					return nil, err
				}
				return &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent(string(body))}, StructuredContent: body}, nil
			}})
		if err != nil {
			b.Fatal(err)
		}
	}
	srv := handlers.NewServer(handlers.Options{Name: "b", Version: "1"}, reg)
	req := &handlers.Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1),
		Params: json.RawMessage(`{"name":"bench_echo","arguments":{"text":"hello"}}`), Session: session{}, Peer: peer{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := srv.Handle(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToolsCallBare(b *testing.B)    { benchCall(b, false) }
func BenchmarkToolsCallGuarded(b *testing.B) { benchCall(b, true) }

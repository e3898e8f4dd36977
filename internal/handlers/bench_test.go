package handlers

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func BenchmarkCallToolEcho(b *testing.B) {
	e := newEnv(b, echoTool("text.echo"))
	ctx := context.Background()
	params := json.RawMessage(`{"name":"text_echo","arguments":{"text":"hello, world"},"_meta":{"progressToken":1}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := &Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1), Params: params, Session: e.sess, Peer: e.peer}
		res, err := e.s.Handle(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if r := res.(*protocol.CallToolResult); r.IsError || r.Content[0].Text != "hello, world" {
			b.Fatalf("result %+v", r)
		}
	}
}

package main

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// BenchmarkAPI_GatewayCall is BenchmarkAPI_ToolsCall for runtime_echo of
// an upstream mcp-runtime reached through this one (runtime2_runtime_echo):
// the per-call cost of the gateway hop, the upstream's own work included
// (it runs in this process too).
func BenchmarkAPI_GatewayCall(b *testing.B) {
	up, err := newApp(context.Background(), config.Default(), io.Discard, noEnv)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- up.serveOn(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-done })

	cfg := config.Default()
	cfg.Upstreams = []upstream.Config{{ID: "runtime2", URL: "http://" + ln.Addr().String() + "/mcp"}}
	c := newBenchClient(b, cfg)
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime2_runtime_echo","arguments":{"text":"hello"}}}`
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.post(call).Body.String(), `hello`) {
		if time.Now().After(deadline) {
			b.Fatal("the gateway did not discover its upstream within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.loop(b, call)
}

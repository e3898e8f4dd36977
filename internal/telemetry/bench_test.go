package telemetry

import (
	"context"
	"net/http"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/testutil/otlptest"
)

// BenchmarkOperation is what one MCP request costs the server's tracing:
// off (no endpoint), and on with every request sampled.
func BenchmarkOperation(b *testing.B) {
	params := paramsWith("00-" + clientTrace + "-" + clientParent + "-01")
	hdr := http.Header{}
	run := func(b *testing.B, tel *Telemetry) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := tel.Extract(context.Background(), params, hdr)
			ctx, op := tel.StartServer(ctx, "tools/call", "echo")
			op.End(ctx, "")
		}
	}
	b.Run("off", func(b *testing.B) {
		tel, _ := Setup(context.Background(), Config{}, noEnv)
		run(b, tel)
	})
	b.Run("on", func(b *testing.B) {
		_, endpoint := otlptest.Start(b, otlptest.HTTP)
		tel, err := Setup(context.Background(), Config{Endpoint: endpoint}, noEnv)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tel.Shutdown(context.Background()) })
		run(b, tel)
	})
}

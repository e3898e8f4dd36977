// Command mcpgo serves the benchmark's echo tool with
// github.com/mark3labs/mcp-go's StreamableHTTPServer (default options,
// logging off).
package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/benchserver"
)

func main() {
	benchserver.Main("mcpgo", newHandler())
}

func newHandler() http.Handler {
	s := server.NewMCPServer("mcpgo-bench", "1.0.0", server.WithToolCapabilities(false))
	echo := mcp.NewTool("echo",
		mcp.WithDescription("Returns the text argument unchanged."),
		mcp.WithString("text", mcp.Required()),
	)
	s.AddTool(echo, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	discard := slog.New(slog.DiscardHandler)
	return server.NewStreamableHTTPServer(s, server.WithStreamableHTTPLogger(discard))
}

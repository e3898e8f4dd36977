// Command mcpgo serves the benchmark's echo and memory_retrieve tools with
// github.com/mark3labs/mcp-go's StreamableHTTPServer (default options,
// logging off). mcp-go serves both protocol eras on one endpoint.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/benchserver"
	"github.com/mcp-runtime/mcp-runtime/bench/internal/lookup"
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
	cache := lookup.NewCache()
	retrieve := mcp.NewToolWithRawSchema(lookup.Tool, lookup.Description, json.RawMessage(lookup.Schema))
	s.AddTool(retrieve, mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, in lookup.Args) (*mcp.CallToolResult, error) {
		e, ok := cache.Get(in.Key)
		if !ok {
			return mcp.NewToolResultError("no entry under " + in.Key), nil
		}
		return mcp.NewToolResultStructuredOnly(e), nil
	}))
	discard := slog.New(slog.DiscardHandler)
	return server.NewStreamableHTTPServer(s, server.WithStreamableHTTPLogger(discard))
}

// Command gosdk serves the benchmark's echo and memory_retrieve tools with
// the official github.com/modelcontextprotocol/go-sdk:
// mcp.NewStreamableHTTPHandler with default options (stateful sessions, SSE
// responses, logging off). The go-sdk serves the 2026-07-28 era only from
// a stateless handler, so a request whose MCP-Protocol-Version header
// names that era goes to a second handler with Stateless set, as a
// dual-era go-sdk deployment would route it.
package main

import (
	"context"
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/benchserver"
	"github.com/mcp-runtime/mcp-runtime/bench/internal/lookup"
)

const modernVersion = "2026-07-28"

type echoArgs struct {
	Text string `json:"text"`
}

func main() {
	benchserver.Main("gosdk", newHandler())
}

func newHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk-bench", Version: "1.0.0"}, nil)
	// The schemas are given explicitly so that every benchmarked server
	// advertises (and validates against) exactly the same ones; inferring
	// them from the argument types would add "additionalProperties": false.
	schema := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"text": {Type: "string"}},
		Required:   []string{"text"},
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Returns the text argument unchanged.",
		InputSchema: schema,
	}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	cache := lookup.NewCache()
	mcp.AddTool(s, &mcp.Tool{
		Name:        lookup.Tool,
		Description: lookup.Description,
		InputSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"key": {Type: "string"}},
			Required:   []string{"key"},
		},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in lookup.Args) (*mcp.CallToolResult, any, error) {
		e, ok := cache.Get(in.Key)
		if !ok {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no entry under " + in.Key}}}, nil, nil
		}
		return nil, e, nil
	})
	get := func(*http.Request) *mcp.Server { return s }
	legacy := mcp.NewStreamableHTTPHandler(get, nil)
	modern := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("MCP-Protocol-Version") >= modernVersion {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	})
}

// Command gosdk serves the benchmark's echo tool with the official
// github.com/modelcontextprotocol/go-sdk: mcp.NewStreamableHTTPHandler with
// default options (stateful sessions, SSE responses, logging off).
package main

import (
	"context"
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/benchserver"
)

type echoArgs struct {
	Text string `json:"text"`
}

func main() {
	benchserver.Main("gosdk", newHandler())
}

func newHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk-bench", Version: "1.0.0"}, nil)
	// The schema is given explicitly so that every benchmarked server
	// advertises (and validates against) exactly the same one; inferring it
	// from echoArgs would add "additionalProperties": false.
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
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

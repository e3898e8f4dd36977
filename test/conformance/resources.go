package main

import (
	"context"
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

const watchedURI = "test://watched-resource"

func registerResources(srv *handlers.Server, tr *transport.Transport) error {
	static := func(uri, name, mime string, rc protocol.ResourceContents) handlers.Resource {
		return handlers.Resource{
			Resource: protocol.Resource{URI: uri, Name: name, Description: "Conformance fixture " + name, MimeType: mime},
			Read: func(context.Context, handlers.Session) ([]protocol.ResourceContents, error) {
				return []protocol.ResourceContents{rc}, nil
			},
		}
	}
	for _, r := range []handlers.Resource{
		static("test://static-text", "static-text", "text/plain",
			protocol.ResourceContents{URI: "test://static-text", MimeType: "text/plain", Text: "This is the content of the static text resource."}),
		static("test://static-binary", "static-binary", "image/png",
			protocol.ResourceContents{URI: "test://static-binary", MimeType: "image/png", Blob: pngBase64, IsBlob: true}),
		static(watchedURI, "watched-resource", "text/plain",
			protocol.ResourceContents{URI: watchedURI, MimeType: "text/plain", Text: "Watched resource content"}),
	} {
		if err := srv.AddResource(r); err != nil {
			return err
		}
	}
	err := srv.AddResourceTemplate(handlers.ResourceTemplate{
		ResourceTemplate: protocol.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Description: "A resource per id", MimeType: "application/json"},
		Read: func(_ context.Context, _ handlers.Session, uri string, vars map[string]string) ([]protocol.ResourceContents, error) {
			return []protocol.ResourceContents{{URI: uri, MimeType: "application/json", Text: fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, vars["id"], vars["id"])}}, nil
		},
	})
	if err != nil {
		return err
	}
	// A tool that changes the watched resource, so subscribers get
	// notifications/resources/updated on their GET stream.
	return srv.Tools().Add(handlers.Tool{
		Name: "test_update_watched_resource", Description: "Marks test://watched-resource as changed.",
		Handler: func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
			if _, err := tr.ResourceUpdated(tenant.Default, watchedURI); err != nil {
				return nil, err
			}
			return handlers.TextResult("updated " + watchedURI), nil
		},
	})
}

func registerPrompts(srv *handlers.Server) error {
	user := func(c protocol.Content) protocol.PromptMessage {
		return protocol.PromptMessage{Role: "user", Content: c}
	}
	prompts := []handlers.Prompt{
		{
			Prompt: protocol.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments"},
			Get: func(context.Context, handlers.Session, map[string]string) (*protocol.GetPromptResult, error) {
				return &protocol.GetPromptResult{Messages: []protocol.PromptMessage{user(protocol.TextContent("This is a simple prompt for testing."))}}, nil
			},
		},
		{
			Prompt: protocol.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments", Arguments: []protocol.PromptArgument{
				{Name: "arg1", Description: "First test argument", Required: true},
				{Name: "arg2", Description: "Second test argument", Required: true},
			}},
			Get: func(_ context.Context, _ handlers.Session, a map[string]string) (*protocol.GetPromptResult, error) {
				text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])
				return &protocol.GetPromptResult{Messages: []protocol.PromptMessage{user(protocol.TextContent(text))}}, nil
			},
			Complete: func(context.Context, handlers.Session, string, string) ([]string, error) { return nil, nil },
		},
		{
			Prompt: protocol.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt embedding a resource", Arguments: []protocol.PromptArgument{
				{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
			}},
			Get: func(_ context.Context, _ handlers.Session, a map[string]string) (*protocol.GetPromptResult, error) {
				rc := protocol.ResourceContents{URI: a["resourceUri"], MimeType: "text/plain", Text: "Embedded resource content for testing."}
				return &protocol.GetPromptResult{Messages: []protocol.PromptMessage{
					user(protocol.EmbeddedResource(rc)),
					user(protocol.TextContent("Please process the embedded resource above.")),
				}}, nil
			},
		},
		{
			Prompt: protocol.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image"},
			Get: func(context.Context, handlers.Session, map[string]string) (*protocol.GetPromptResult, error) {
				return &protocol.GetPromptResult{Messages: []protocol.PromptMessage{
					user(protocol.ImageContent(pngBase64, "image/png")),
					user(protocol.TextContent("Please analyze the image above.")),
				}}, nil
			},
		},
	}
	for _, p := range prompts {
		if err := srv.AddPrompt(p); err != nil {
			return err
		}
	}
	return nil
}

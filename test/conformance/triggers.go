package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// The conformance suite's hooks that change the lists at run time
// (server-stateless, "Dynamic List Mutations"): each call really changes
// the list, then tells the clients, as a federation sync does.
const dynamicGroup = "dynamic"

func registerTriggers(srv *handlers.Server, tools *handlers.ToolRegistry, tr *transport.Transport) error {
	var mu sync.Mutex
	toolRound, promptRound := 0, 0
	triggerTools := func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		toolRound++
		name := fmt.Sprintf("test_dynamic_tool_%d", toolRound%2)
		tool := fixed(name, "Appears and goes with test_trigger_tool_change.", result(protocol.TextContent("dynamic")))
		tool.Group = dynamicGroup
		if _, errs := tools.ReplaceGroup(dynamicGroup, []handlers.Tool{tool}); len(errs) > 0 {
			return nil, fmt.Errorf("change the tools: %v", errs)
		}
		if _, err := tr.ToolsListChanged(); err != nil {
			return nil, err
		}
		return result(protocol.TextContent("tools changed: " + name)), nil
	}
	triggerPrompts := func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		promptRound++
		name := fmt.Sprintf("test_dynamic_prompt_%d", promptRound)
		err := srv.AddPrompt(handlers.Prompt{Prompt: protocol.Prompt{Name: name, Description: "Added by test_trigger_prompt_change."},
			Get: func(context.Context, handlers.Session, map[string]string) (*protocol.GetPromptResult, error) {
				return &protocol.GetPromptResult{Messages: []protocol.PromptMessage{{Role: "user", Content: protocol.TextContent("dynamic")}}}, nil
			}})
		if err != nil {
			return nil, err
		}
		if _, err := tr.ListChanged(protocol.NotificationPromptsListChanged); err != nil {
			return nil, err
		}
		return result(protocol.TextContent("prompts changed: " + name)), nil
	}
	return tools.Add(
		handlers.Tool{Name: "test_trigger_tool_change", Description: "Changes the tool list and tells the listeners.", Handler: triggerTools},
		handlers.Tool{Name: "test_trigger_prompt_change", Description: "Adds a prompt and tells the listeners.", Handler: triggerPrompts},
	)
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/requeststate"
)

// The suite's multi-round-trip fixtures (input-required-result-*,
// basic/patterns/mrtr), written once in the style of handlers.NeedInput:
// a modern client gets InputRequiredResult rounds, a legacy session the
// same questions as server-to-client requests.

func elicitation(message, property, typ string) protocol.InputRequest {
	params, _ := json.Marshal(map[string]any{"message": message, "requestedSchema": map[string]any{
		"type": "object", "properties": map[string]any{property: map[string]any{"type": typ}}, "required": []string{property}}})
	return protocol.InputRequest{Method: protocol.MethodElicitationCreate, Params: params}
}

func samplingRequest(text string, maxTokens int) protocol.InputRequest {
	params, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": protocol.TextContent(text)}}, "maxTokens": maxTokens})
	return protocol.InputRequest{Method: protocol.MethodSamplingCreateMessage, Params: params}
}

var rootsRequest = protocol.InputRequest{Method: protocol.MethodRootsList, Params: json.RawMessage(`{}`)}

// accepted returns the content member of an accepted elicitation's
// answer to key, and whether there is one.
func accepted(in handlers.Input, key, member string) (string, bool) {
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	raw, ok := in.Responses[key]
	if !ok || json.Unmarshal(raw, &r) != nil || r.Action != "accept" {
		return "", false
	}
	v, ok := r.Content[member]
	return fmt.Sprint(v), ok
}

// answered reports whether every key has an answer.
func answered(in handlers.Input, keys ...string) bool {
	for _, k := range keys {
		if _, ok := in.Responses[k]; !ok {
			return false
		}
	}
	return true
}

func need(state string, reqs map[string]protocol.InputRequest) error {
	n := &handlers.NeedInput{Requests: reqs}
	if state != "" {
		n.State = []byte(state)
	}
	return n
}

func registerMRTR(srv *handlers.Server, tools *handlers.ToolRegistry) error {
	key := make([]byte, requeststate.MinKeyBytes)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	sealer, err := requeststate.New(time.Now, key)
	if err != nil {
		return err
	}
	srv.SetStateSealer(handlers.NewSealedRounds(sealer, 10*time.Minute, nil))
	tool := func(name string, run func(context.Context, *handlers.ToolCall) (string, error)) handlers.Tool {
		return handlers.Tool{Name: name, Description: "A multi-round-trip fixture (basic/patterns/mrtr).",
			Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
				text, err := run(ctx, call)
				if err != nil {
					return nil, err
				}
				return result(protocol.TextContent(text)), nil
			}}
	}
	err = tools.Add(
		tool("test_input_required_result_elicitation", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			if name, ok := accepted(handlers.InputOf(ctx), "user_name", "name"); ok {
				return "Hello, " + name + "!", nil
			}
			return "", need("", map[string]protocol.InputRequest{"user_name": elicitation("What is your name?", "name", "string")})
		}),
		tool("test_input_required_result_sampling", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			if answered(in, "capital_question") {
				return "Sampling answered: " + string(in.Responses["capital_question"]), nil
			}
			return "", need("", map[string]protocol.InputRequest{"capital_question": samplingRequest("What is the capital of France?", 100)})
		}),
		tool("test_input_required_result_list_roots", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			if answered(in, "client_roots") {
				return "Roots: " + string(in.Responses["client_roots"]), nil
			}
			return "", need("", map[string]protocol.InputRequest{"client_roots": rootsRequest})
		}),
		tool("test_input_required_result_request_state", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			if string(in.State) == "awaiting-confirm" && answered(in, "confirm") {
				return "state-ok: the requestState came back and was verified", nil
			}
			return "", need("awaiting-confirm", map[string]protocol.InputRequest{"confirm": elicitation("Please confirm", "ok", "boolean")})
		}),
		tool("test_input_required_result_multiple_inputs", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			if string(in.State) == "three-questions" && answered(in, "user_name", "greeting", "client_roots") {
				return "All three answered", nil
			}
			return "", need("three-questions", map[string]protocol.InputRequest{
				"user_name":    elicitation("What is your name?", "name", "string"),
				"greeting":     samplingRequest("Generate a greeting", 50),
				"client_roots": rootsRequest,
			})
		}),
		tool("test_input_required_result_multi_round", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			state := string(in.State)
			if name, ok := accepted(in, "step1", "name"); ok && state == "step1" {
				return "", need("step2:"+name, map[string]protocol.InputRequest{"step2": elicitation("Step 2: What is your favorite color?", "color", "string")})
			}
			if color, ok := accepted(in, "step2", "color"); ok && len(state) > 6 && state[:6] == "step2:" {
				return fmt.Sprintf("%s likes %s", state[6:], color), nil
			}
			return "", need("step1", map[string]protocol.InputRequest{"step1": elicitation("Step 1: What is your name?", "name", "string")})
		}),
		tool("test_input_required_result_tampered_state", func(ctx context.Context, _ *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			if string(in.State) == "integrity-checked" && answered(in, "confirm") {
				return "The state was intact", nil
			}
			return "", need("integrity-checked", map[string]protocol.InputRequest{"confirm": elicitation("Please confirm", "ok", "boolean")})
		}),
		tool("test_input_required_result_capabilities", func(ctx context.Context, call *handlers.ToolCall) (string, error) {
			in := handlers.InputOf(ctx)
			if len(in.Responses) > 0 {
				return "Answered with what the client can do", nil
			}
			caps := call.Session.ClientCapabilities()
			reqs := map[string]protocol.InputRequest{}
			if caps.Sampling != nil {
				reqs["summary"] = samplingRequest("Summarize the project", 50)
			}
			if caps.Elicitation != nil {
				reqs["user_name"] = elicitation("What is your name?", "name", "string")
			}
			if len(reqs) == 0 {
				return "The client can answer nothing; nothing was asked", nil
			}
			return "", need("", reqs)
		}),
	)
	if err != nil {
		return err
	}
	return srv.AddPrompt(handlers.Prompt{
		Prompt: protocol.Prompt{Name: "test_input_required_result_prompt", Description: "Asks the client for context before it answers (basic/patterns/mrtr)."},
		Get: func(ctx context.Context, _ handlers.Session, _ map[string]string) (*protocol.GetPromptResult, error) {
			if c, ok := accepted(handlers.InputOf(ctx), "user_context", "context"); ok {
				return &protocol.GetPromptResult{Messages: []protocol.PromptMessage{{Role: "user", Content: protocol.TextContent("Context: " + c)}}}, nil
			}
			return nil, need("", map[string]protocol.InputRequest{"user_context": elicitation("What context should the prompt use?", "context", "string")})
		},
	})
}

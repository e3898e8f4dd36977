package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// A 1x1 PNG.
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

// wavBase64 is a valid, silent 8 kHz mono 16-bit WAV of 8 samples.
func wavBase64() string {
	const samples = 8
	b := make([]byte, 44+samples*2)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+samples*2))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], 1) // mono
	binary.LittleEndian.PutUint32(b[24:], 8000)
	binary.LittleEndian.PutUint32(b[28:], 16000)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], samples*2)
	return base64.StdEncoding.EncodeToString(b)
}

func result(c ...protocol.Content) *protocol.CallToolResult {
	return &protocol.CallToolResult{Content: c}
}

func fixed(name, description string, r *protocol.CallToolResult) handlers.Tool {
	return handlers.Tool{Name: name, Description: description, Handler: func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
		return r, nil
	}}
}

func registerTools(reg *handlers.ToolRegistry) error {
	text := protocol.TextContent
	embedded := func(uri string) protocol.Content {
		return protocol.EmbeddedResource(protocol.ResourceContents{URI: uri, MimeType: "text/plain", Text: "This is an embedded resource"})
	}
	return reg.Add(
		fixed("test_simple_text", "Returns a simple text block.", result(text("This is a simple text response for testing."))),
		fixed("test_image_content", "Returns an image block.", result(protocol.ImageContent(pngBase64, "image/png"))),
		fixed("test_audio_content", "Returns an audio block.", result(protocol.AudioContent(wavBase64(), "audio/wav"))),
		fixed("test_embedded_resource", "Returns an embedded resource.", result(embedded("test://embedded-resource"))),
		fixed("test_multiple_content_types", "Returns text, image and resource blocks.", result(
			text("This is text content"), protocol.ImageContent(pngBase64, "image/png"), embedded("test://embedded-in-multiple"))),
		handlers.Tool{Name: "test_error_handling", Description: "Always fails as a tool.", Handler: func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
			return nil, fmt.Errorf("this tool intentionally returns an error for testing")
		}},
		handlers.Tool{Name: "test_tool_with_logging", Description: "Sends three log messages while running.", Handler: withLogging},
		handlers.Tool{Name: "test_tool_with_progress", Description: "Reports progress three times while running.", Handler: withProgress},
		handlers.Tool{
			Name: "test_sampling", Description: "Asks the client's model to complete a prompt.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`),
			Handler:     handlers.Typed(sampling),
		},
		handlers.Tool{
			Name: "test_elicitation", Description: "Asks the user for a username.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
			Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, in struct{ Message string }) (*protocol.CallToolResult, error) {
				return elicit(ctx, call, in.Message, `{"type":"object","properties":{"username":{"type":"string","description":"Your preferred username"}},"required":["username"]}`)
			}),
		},
		handlers.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits with default values (SEP-1034).", Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			return elicit(ctx, call, "Test defaults for primitives", `{"type":"object","properties":{
				"name":{"type":"string","description":"User name","default":"John Doe"},
				"age":{"type":"integer","description":"User age","default":30},
				"score":{"type":"number","description":"User score","default":95.5},
				"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
				"verified":{"type":"boolean","description":"Verification status","default":true}}}`)
		}},
		handlers.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits with every enum form (SEP-1330).", Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			return elicit(ctx, call, "Test enum schemas", `{"type":"object","properties":{
				"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
				"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
				"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
				"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
				"titledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]}}}}`)
		}},
		handlers.Tool{
			Name: "json_schema_2020_12_tool", Description: "Has a JSON Schema 2020-12 input schema with $schema, $defs and additionalProperties.",
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
				"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
				"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},
					"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
				"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
				"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
				"then":{"required":["phone"]},"else":{"required":["email"]},
				"additionalProperties":false}`),
			Handler: func(_ context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
				return result(text("JSON Schema 2020-12 tool called with: " + string(call.Arguments))), nil
			},
		},
		// The fixtures of the 2026-07-28 scenarios (server-stateless,
		// http-custom-header-server-validation).
		handlers.Tool{
			Name: "test_missing_capability", Description: "Needs the client's sampling capability; refused (-32021) to a client that did not declare it.",
			ClientCapabilities: []string{"sampling"},
			Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
				return sampling(ctx, call, struct{ Prompt string }{"Say hello"})
			},
		},
		handlers.Tool{Name: "test_streaming_elicitation", Description: "Reports progress, then asks the user for a username.", Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			if err := call.Progress(ctx, 0, 1, "asking the user"); err != nil {
				return nil, err
			}
			return elicit(ctx, call, "What is your username?", `{"type":"object","properties":{"username":{"type":"string"}},"required":["username"]}`)
		}},
		handlers.Tool{Name: "test_logging_tool", Description: "Sends three log messages while running.", Handler: withLogging},
		handlers.Tool{
			Name: "test_custom_header", Description: "Echoes its region, which a modern client also sends as the Mcp-Param-Region header (x-mcp-header).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`),
			Handler: handlers.Typed(func(_ context.Context, _ *handlers.ToolCall, in struct{ Region string }) (*protocol.CallToolResult, error) {
				return result(text("region: " + in.Region)), nil
			}),
		},
		handlers.Tool{Name: "test_reconnection", Description: "Closes its SSE stream mid-call; the result arrives after the client resumes (SEP-1699).", LongRunning: true, Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			call.Peer.CloseStream(10)
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, err
			}
			return result(text("Reconnection test completed successfully.")), nil
		}},
	)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func withLogging(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return nil, err
			}
		}
		if err := call.Log(ctx, protocol.LevelInfo, "conformance", msg); err != nil {
			return nil, err
		}
	}
	return result(protocol.TextContent("Tool with logging executed successfully")), nil
}

func withProgress(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
	for _, p := range []float64{0, 50, 100} {
		if err := call.Progress(ctx, p, 100, fmt.Sprintf("Completed step %.0f of 100", p)); err != nil {
			return nil, err
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return result(protocol.TextContent("Progress reported")), nil
}

func sampling(ctx context.Context, call *handlers.ToolCall, in struct{ Prompt string }) (*protocol.CallToolResult, error) {
	raw, err := call.Peer.Request(ctx, protocol.MethodSamplingCreateMessage, map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": protocol.TextContent(in.Prompt)}},
		"maxTokens": 100,
	})
	if err != nil {
		return nil, fmt.Errorf("sampling failed: %w", err)
	}
	var res struct {
		Content protocol.Content `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode sampling result: %w", err)
	}
	return result(protocol.TextContent("LLM response: " + res.Content.Text)), nil
}

func elicit(ctx context.Context, call *handlers.ToolCall, message, schema string) (*protocol.CallToolResult, error) {
	raw, err := call.Peer.Request(ctx, protocol.MethodElicitationCreate, map[string]any{
		"message": message, "requestedSchema": json.RawMessage(schema),
	})
	if err != nil {
		return nil, fmt.Errorf("elicitation failed: %w", err)
	}
	return result(protocol.TextContent("Elicitation result: " + string(raw))), nil
}

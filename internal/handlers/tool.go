package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// ToolHandler runs one tool call. Returning a *protocol.Error makes the call
// a JSON-RPC error; any other error becomes an isError result carrying its
// message, because a failed tool is something the model should read and act
// on (tools, "Error Handling").
type ToolHandler func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error)

// Tool is a tool as it is registered.
type Tool struct {
	// Name is the canonical dotted name, e.g. "memory.store". Segments are
	// [A-Za-z0-9_-]+; the exposed name joins them with the separator.
	Name        string
	Title       string
	Description string
	// InputSchema is a JSON Schema (2020-12 unless $schema says otherwise)
	// for the arguments; its type must be "object". Empty means no arguments.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *protocol.ToolAnnotations
	Handler      ToolHandler
	// Precheck, if set, runs before the arguments are validated against
	// InputSchema; a non-nil result rejects the call with that result and
	// the handler does not run. The runtime guardrails (request limits,
	// guard gates) use it, so an oversized request is refused before any
	// work is done on it (INV-MCP-LIMIT-002).
	// It gets the call (its arguments and client session) so that a
	// rejection can be traced like any other call.
	Precheck func(ctx context.Context, call *ToolCall) *protocol.CallToolResult
	// Invalid, if set, formats the result of a call whose arguments fail
	// InputSchema; nil gives a plain isError text result.
	Invalid func(ctx context.Context, call *ToolCall, message string) *protocol.CallToolResult
	// LongRunning marks a tool that may end its SSE stream early with
	// Peer.CloseStream and keep working, the client resuming with
	// Last-Event-ID (SEP-1699 polling). The transport runs such a tool on a
	// goroutine of its own so that the HTTP response can end while it runs;
	// every other tool runs on the request's goroutine, which is cheaper.
	LongRunning bool
	// Group, if set, names the set of tools the tool belongs to, which
	// ToolRegistry.ReplaceGroup swaps as a whole (an upstream server's
	// tools, rediscovered at run time).
	Group string
	// BareName, if set, is a short name tools/call also accepts while no
	// other tool has the same one: an upstream tool's own name, so
	// "search" finds "server-a.search" (INV-MCP-ECO-003). When several
	// tools share it, the call fails with AMBIGUOUS_TOOL.
	BareName string
	// ClientCapabilities names the client capabilities the tool's
	// handler needs ("sampling", "elicitation", "roots"): a request of
	// the 2026-07-28 era that does not declare one of them is refused
	// with -32021 before the handler runs (basic/index, "Client
	// Capabilities"). A legacy session's capabilities are the handler's
	// to check, as they always were.
	ClientCapabilities []string
}

// ToolCall is what a tool handler gets besides its context.
type ToolCall struct {
	// Name is the canonical name of the tool called.
	Name      string
	Arguments json.RawMessage
	Session   Session
	Peer      Peer
	// progressToken is the raw _meta.progressToken, echoed with its type.
	progressToken json.RawMessage
}

// AnswerEarly sends res as the call's response before the handler returns
// (see Peer.Answer); false if already answered.
func (c *ToolCall) AnswerEarly(res *protocol.CallToolResult) bool { return c.Peer.Answer(res) }

// ToolName, RawArguments and ClientSessionID, with AnswerEarly, are what
// the guardrails read of a call (pipeline.Call).
func (c *ToolCall) ToolName() string { return c.Name }

// RawArguments returns the call's arguments as the client sent them.
func (c *ToolCall) RawArguments() json.RawMessage { return c.Arguments }

// ClientSessionID returns the id of the call's client session, "" without one.
func (c *ToolCall) ClientSessionID() string {
	if c.Session == nil {
		return ""
	}
	return c.Session.ID()
}

// Progress sends notifications/progress when the caller asked for progress
// (a progressToken in _meta); otherwise it does nothing. total <= 0 means
// unknown.
func (c *ToolCall) Progress(ctx context.Context, progress, total float64, message string) error {
	if len(c.progressToken) == 0 {
		return nil
	}
	p := protocol.ProgressParams{ProgressToken: c.progressToken, Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	if err := c.Peer.Notify(ctx, protocol.NotificationProgress, p); err != nil {
		return fmt.Errorf("send progress for %s: %w", c.Name, err)
	}
	return nil
}

// Log sends notifications/message if level is at or above the level the
// client set with logging/setLevel.
func (c *ToolCall) Log(ctx context.Context, level protocol.LoggingLevel, logger string, data any) error {
	if level.Severity() < c.Session.LogLevel().Severity() {
		return nil
	}
	p := protocol.LoggingMessageParams{Level: level, Logger: logger, Data: data}
	if err := c.Peer.Notify(ctx, protocol.NotificationMessage, p); err != nil {
		return fmt.Errorf("send log message for %s: %w", c.Name, err)
	}
	return nil
}

// Typed adapts a handler taking decoded arguments. The arguments have
// already passed the tool's inputSchema, so a decode failure here means the
// schema and the Go type disagree; it is reported as invalid arguments.
func Typed[In any](fn func(ctx context.Context, call *ToolCall, in In) (*protocol.CallToolResult, error)) ToolHandler {
	return func(ctx context.Context, call *ToolCall) (*protocol.CallToolResult, error) {
		var in In
		if len(call.Arguments) > 0 {
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return protocol.ToolError(fmt.Sprintf("invalid arguments for %s: %v", call.Name, err)), nil
			}
		}
		return fn(ctx, call, in)
	}
}

// TextResult is a successful result with one text block.
func TextResult(text string) *protocol.CallToolResult {
	return &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent(text)}}
}

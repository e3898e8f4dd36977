// Package runtimetools holds the tools and resources every mcp-runtime
// serves regardless of storage: runtime introspection for agents and
// operators. The stateful tools (memory, session, agent, trace) are
// statetools'.
package runtimetools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// Info describes the running server.
type Info struct {
	Name    string
	Version string
	Started time.Time
	// Sessions reports the number of live client sessions.
	Sessions func() int
}

// infoDoc is the JSON of runtime.info and runtime://info.
type infoDoc struct {
	Name              string   `json:"name"`
	Version           string   `json:"version"`
	UptimeSeconds     int64    `json:"uptimeSeconds"`
	ProtocolVersion   string   `json:"protocolVersion"`
	SupportedVersions []string `json:"supportedVersions"`
	ClientSessions    int      `json:"clientSessions"`
}

func (in Info) doc(s handlers.Session) infoDoc {
	return infoDoc{
		Name: in.Name, Version: in.Version,
		UptimeSeconds:   int64(time.Since(in.Started).Seconds()),
		ProtocolVersion: s.ProtocolVersion(),
		// Every revision served: the modern ones a request names in its
		// _meta, then the legacy ones initialize negotiates.
		SupportedVersions: append(protocol.ModernVersions(), protocol.SupportedVersions()...),
		ClientSessions:    in.Sessions(),
	}
}

func yes() *bool { v := true; return &v }
func no() *bool  { v := false; return &v }

// Register adds the runtime tools, through the guardrail pipeline, and the
// runtime://info resource.
func Register(srv *handlers.Server, p *guarded.Pipeline, in Info) error {
	readOnly := &protocol.ToolAnnotations{ReadOnlyHint: yes(), DestructiveHint: no(), IdempotentHint: yes(), OpenWorldHint: no()}
	type echoArgs struct {
		Text string `json:"text"`
	}
	err := guarded.Register(srv.Tools(), p,
		guarded.Tool{
			Name:        "runtime.echo",
			Title:       "Echo",
			Description: "Returns the given text unchanged, as data.text. Use it to check that the server is reachable and to measure round-trip latency through it.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"Text to return."}},"required":["text"],"additionalProperties":false}`),
			Annotations: readOnly,
			Category:    timeout.Query,
			Run: func(_ context.Context, call *handlers.ToolCall) (any, error) {
				var a echoArgs
				if err := json.Unmarshal(call.Arguments, &a); err != nil {
					return nil, pipeline.ErrInvalid("arguments: %v", err)
				}
				return a, nil
			},
		},
		guarded.Tool{
			Name:        "runtime.info",
			Title:       "Server information",
			Description: "Describes this mcp-runtime server: name, version, uptime, the protocol version of your client session, the versions it supports, and how many client sessions are open.",
			Annotations: readOnly,
			Category:    timeout.Query,
			Run: func(_ context.Context, call *handlers.ToolCall) (any, error) {
				return in.doc(call.Session), nil
			},
		},
	)
	if err != nil {
		return fmt.Errorf("register runtime tools: %w", err)
	}
	err = srv.AddResource(handlers.Resource{
		Resource: protocol.Resource{
			URI: "runtime://info", Name: "runtime-info", Title: "Server information",
			Description: "The same document as the data of the runtime_info tool.", MimeType: "application/json",
		},
		Read: func(_ context.Context, s handlers.Session) ([]protocol.ResourceContents, error) {
			body, err := json.Marshal(in.doc(s))
			if err != nil {
				return nil, fmt.Errorf("encode runtime info: %w", err)
			}
			return []protocol.ResourceContents{{URI: "runtime://info", MimeType: "application/json", Text: string(body)}}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("register runtime resource: %w", err)
	}
	return nil
}

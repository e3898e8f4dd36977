package handlers

import (
	"context"
	"encoding/json"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Session is the client session a request belongs to.
type Session interface {
	ID() string
	ProtocolVersion() string
	ClientInfo() protocol.Implementation
	ClientCapabilities() protocol.ClientCapabilities
	// LogLevel is the minimum level of notifications/message the client
	// asked for with logging/setLevel.
	LogLevel() protocol.LoggingLevel
	SetLogLevel(protocol.LoggingLevel)
	// Subscribe records interest in notifications/resources/updated for uri.
	Subscribe(uri string) error
	Unsubscribe(uri string)
}

// Peer sends messages to the client over the connection of one request:
// on that request's SSE stream when the client accepts one, otherwise on
// the client session's GET stream (basic/transports).
type Peer interface {
	Notify(ctx context.Context, method string, params any) error
	// Request sends a server-to-client request (sampling/createMessage,
	// elicitation/create, roots/list) and waits for the client's answer.
	// A JSON-RPC error answer is returned as *protocol.Error.
	Request(ctx context.Context, method string, params any) (json.RawMessage, error)
	// CloseStream ends the request's SSE stream now, asking the client to
	// reconnect with Last-Event-ID after retryMs (SEP-1699 polling).
	// Messages sent afterwards wait in the stream's log. It takes effect
	// only for tools registered LongRunning whose client accepts SSE;
	// otherwise it does nothing and the response completes normally.
	CloseStream(retryMs int)
	// Answer sends result as the request's response now, before the
	// handler returns; what the handler returns later is dropped. It
	// reports whether it answered (false: already answered). The runtime
	// uses it to answer a call that overran its timeout without waiting
	// for a handler that ignores its context (INV-MCP-TIMEOUT-001).
	Answer(result any) bool
}

// Request is one JSON-RPC request as the transport hands it over.
type Request struct {
	Method  string
	ID      protocol.ID
	Params  json.RawMessage
	Session Session
	Peer    Peer
	// Retry: the params of a modern request carry a multi-round retry's
	// inputResponses or requestState, as the transport's one scan of them
	// found (protocol.ModernMeta.Round); only then are they decoded.
	Retry bool
}

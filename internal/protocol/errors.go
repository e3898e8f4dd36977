package protocol

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1) and the MCP additions
// (schema/2025-11-25/schema.ts).
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeResourceNotFound = -32002
	CodeURLElicitation   = -32042
)

// Error is a JSON-RPC error object. It implements error so handlers can
// return it directly; any other error from a handler becomes -32603.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e carrying data (marshalled to JSON). A value
// that cannot be marshalled is dropped rather than failing the response.
func (e *Error) WithData(data any) *Error {
	out := *e
	if b, err := json.Marshal(data); err == nil {
		out.Data = b
	}
	return &out
}

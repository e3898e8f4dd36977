package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// What arrives on a call's stream is read with the protocol package's
// scanner (one validity pass, then members sliced in place) rather than
// encoding/json's reflection: every proxied call decodes at least one
// message and its result, and the gateway's CPU per call is measured
// against a local tool's (BENCHMARKS.md, "The call-stream client").
// Member names match exactly, as JSON-RPC spells them.

// callMessage is any JSON-RPC message on a call's stream. Params aliases
// the bytes it was decoded from.
type callMessage struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *jsonrpc.Error
}

// decodeCallMessage reads one message's envelope.
func decodeCallMessage(data []byte) (callMessage, error) {
	var m callMessage
	if !json.Valid(data) {
		return m, errors.New("the message is not valid JSON")
	}
	var method, errRaw json.RawMessage
	err := protocol.EachMember(data, func(k string, v []byte) bool {
		switch k {
		case "id":
			m.ID = v
		case "method":
			method = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			errRaw = v
		}
		return true
	})
	if err != nil {
		return m, err
	}
	if len(method) > 0 && string(method) != "null" {
		s, ok := protocol.StringValue(method)
		if !ok {
			return m, errors.New("the message's method is not a string")
		}
		m.Method = s
	}
	if len(errRaw) > 0 && string(errRaw) != "null" {
		if err := json.Unmarshal(errRaw, &m.Error); err != nil {
			return m, fmt.Errorf("the message's error: %w", err)
		}
	}
	return m, nil
}

// decodeCallResult keeps a result's parts as the server wrote them,
// compacted into a buffer of their own (the stream's buffer is reused).
func decodeCallResult(raw json.RawMessage) (CallResult, error) {
	var compact bytes.Buffer
	compact.Grow(len(raw))
	if err := json.Compact(&compact, raw); err != nil {
		return CallResult{}, failed(notMCP, err)
	}
	var r CallResult
	var content, isError json.RawMessage
	err := protocol.EachMember(compact.Bytes(), func(k string, v []byte) bool {
		switch k {
		case "content":
			content = v
		case "structuredContent":
			r.StructuredContent = v
		case "isError":
			isError = v
		case "_meta":
			r.Meta = v
		}
		return true
	})
	if err != nil {
		return CallResult{}, failed(notMCP+": the result is not a tools/call result", err)
	}
	switch string(isError) {
	case "", "null", "false":
	case "true":
		r.IsError = true
	default:
		return CallResult{}, failed(notMCP+": the result's isError is not a boolean", nil)
	}
	r.Content = []json.RawMessage{}
	if len(content) > 0 && string(content) != "null" {
		err := protocol.EachElement(content, func(b []byte) bool {
			r.Content = append(r.Content, b)
			return true
		})
		if err != nil {
			return CallResult{}, failed(notMCP+": the result's content is not an array", err)
		}
	}
	for i, b := range r.Content {
		if len(b) == 0 || b[0] != '{' {
			return CallResult{}, failed(fmt.Sprintf("%s: content block %d is not an object", notMCP, i), nil)
		}
	}
	if string(r.StructuredContent) == "null" {
		r.StructuredContent = nil
	}
	if string(r.Meta) == "null" {
		r.Meta = nil
	}
	return r, nil
}
